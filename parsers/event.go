package parsers

import "time"

// Sources of events.
const (
	SourceRay    = "ray"
	SourceVLLM   = "vllm"
	SourceNCCL   = "nccl"
	SourceTorch  = "torch"
	SourcePython = "python"
	SourceOther  = "other"
)

// Levels, normalised across sources.
const (
	LevelDebug    = "debug"
	LevelInfo     = "info"
	LevelWarning  = "warning"
	LevelError    = "error"
	LevelCritical = "critical"
)

// Event is a parsed record.
type Event struct {
	Record
	// Time is the event's time: from the line when it carries a full date,
	// else the container log time, else the line's partial time completed
	// from context, else zero (the consumer then uses receipt time).
	Time      time.Time         `json:"time"`
	Source    string            `json:"source"`
	Level     string            `json:"level,omitempty"`
	Component string            `json:"component,omitempty"` // file:line or Ray component (raylet, gcs_server, ...)
	PID       int               `json:"pid,omitempty"`
	Process   string            `json:"process,omitempty"` // process name from a prefix, e.g. RayWorkerWrapper
	IP        string            `json:"ip,omitempty"`      // ip= of Ray's forwarded-output prefix
	Message   string            `json:"message"`           // the text without prefixes and header
	Fields    map[string]string `json:"fields,omitempty"`  // source-specific fields
	// Partition is the stream partition the event came through, which
	// serve reads from the message subject in cluster mode; 0 otherwise.
	Partition int `json:"partition,omitempty"`
}

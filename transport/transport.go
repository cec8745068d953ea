// Package transport is how log records travel between shippers and the
// analyzer over NATS JetStream: subjects, the batch wire format, connection
// options, and a publisher and a consumer whose batches carry their ack.
package transport

import (
	"strconv"
	"strings"
)

// Stream and subject layout (docs/wire-format.md).
const (
	StreamName     = "FAULTLINE_LOGS"
	StreamSubjects = "faultline.logs.>"
	LogsPrefix     = "faultline.logs."
	FindingsPrefix = "faultline.findings."

	// HeaderMsgID is JetStream's de-duplication header.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderCount holds the number of records in the message.
	HeaderCount = "Faultline-Count"
	// HeaderReadAt is when the shipper read the batch's first record (Unix
	// nanoseconds), for serve's line-to-finding latency; optional.
	HeaderReadAt = "Faultline-Read-At"
	// HeaderShipper is the identity of the shipper process that published
	// the batch (shipper.NewIdentity: host, pid and a random part, new at
	// every start), so that serve can tell two processes publishing under
	// one node name from one that restarted; optional.
	HeaderShipper = "Faultline-Shipper"
)

// Token makes a label safe as one NATS subject token. NATS splits subjects on
// '.', treats '*' and '>' as wildcards and forbids whitespace, so an IP
// address such as 192.168.200.12 becomes 192_168_200_12. An empty label
// becomes "_" so that the subject keeps its number of tokens.
func Token(label string) string {
	if label == "" {
		return "_"
	}
	if strings.IndexFunc(label, badRune) < 0 {
		return label
	}
	return strings.Map(func(r rune) rune {
		if badRune(r) {
			return '_'
		}
		return r
	}, label)
}

func badRune(r rune) bool {
	switch r {
	case '.', '*', '>', ' ', '\t', '\r', '\n', 0:
		return true
	}
	return r < 0x20 || r == 0x7f
}

// LogsSubject is where the shipper of node publishes: faultline.logs.<cluster>.<node>.
func LogsSubject(cluster, node string) string {
	return LogsPrefix + Token(cluster) + "." + Token(node)
}

// FindingsSubject is where findings go: faultline.findings.<cluster>.<severity>.
func FindingsSubject(cluster, severity string) string {
	return FindingsPrefix + Token(cluster) + "." + Token(severity)
}

// MsgID is the Nats-Msg-Id of a batch: the first record's ID and the record
// count. A batch resent unchanged (after a lost PubAck or a reconnect) is
// dropped by the server; a batch re-formed differently after a crash gets a
// new ID, so nothing is ever dropped that was not already stored.
func MsgID(firstRecordID string, count int) string {
	return firstRecordID + "-" + strconv.Itoa(count)
}

package index

import (
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Field names an event has in a query (field:value) and in a Hit.
const (
	FieldCluster   = "cluster"
	FieldNode      = "node"
	FieldContainer = "container"
	FieldFile      = "file"
	FieldStream    = "stream"
	FieldSource    = "source"
	FieldLevel     = "level"
	FieldComponent = "component"
	FieldProcess   = "process"
	FieldCause     = "cause"
	FieldIP        = "ip"
	FieldFields    = "fields" // source-specific fields as "name=value" keywords
	FieldTime      = "time"
	FieldPID       = "pid"
	FieldRank      = "rank"
	FieldLine      = "line"
	FieldMessage   = "message"
	// FieldPartition is the stream partition of an event in cluster mode.
	FieldPartition = "partition"
)

// Where each field lives. A Bleve document is a block of up to blockCap
// records of one file (see blockdoc.go): the fields below vary from record
// to record and are its terms, each term's frequency the bit mask of the
// block's records having it. The fields every record of a block shares
// (cluster, node, container, file, partition) and those read per record
// from the catalog (time, line, level, source) have no terms at all.
var termFields = []string{FieldMessage, FieldStream, FieldComponent, FieldProcess, FieldCause, FieldIP, FieldFields,
	FieldPID, FieldRank}

// keywordFields are the exact-match fields a query may filter with field:value.
var keywordFields = []string{FieldCluster, FieldNode, FieldContainer, FieldFile, FieldStream,
	FieldSource, FieldLevel, FieldComponent, FieldProcess, FieldCause, FieldIP, FieldFields}

// numericFields may be compared with field:>N and friends.
var numericFields = []string{FieldPID, FieldRank}

// NewMapping returns the mapping of the block documents: every field a
// keyword, indexed only (no stored values, doc values or term vectors),
// no catch-all `_all` field and no dynamic fields. Documents are built
// directly (blockdoc.go); the mapping is Bleve's metadata.
func NewMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.DefaultAnalyzer = keyword.Name
	im.DefaultField = FieldMessage
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range termFields {
		fm := bleve.NewKeywordFieldMapping()
		fm.Store = false
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		fm.DocValues = false
		dm.AddFieldMappingsAt(f, fm)
	}
	im.DefaultMapping = dm
	return im
}

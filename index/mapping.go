package index

import (
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/faultline/faultline/parsers"
)

// Field names of an indexed event. All are indexed only; FieldEvent holds
// what a hit shows.
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
	FieldFields    = "fields"    // source-specific fields as "name=value" keywords
	FieldTime      = "time"      // time buckets for ranges (see timeShifts)
	FieldTimeSort  = "time_sort" // exact time: range edges, doc values for sorting and the histogram
	FieldPID       = "pid"       // exact value (see intTerm)
	FieldRank      = "rank"      // exact value, ranged over by term ranges
	FieldLine      = "line"      // zero-padded keyword: one term, ranged over by line:>N
	// FieldFileLine is the file's key (node and path hashed) then the
	// padded line: one file's lines are one stretch of the dictionary, so
	// the context of a record walks its neighbours' terms, not every line
	// number of every file.
	FieldFileLine = "file_line"
	FieldMessage  = "message"
	FieldEvent    = "event" // stored only: the hit (see encodeHit)
	// FieldPartition is the stream partition of an event in cluster mode
	// (exact value, see intTerm), indexed when not 0 or when the index is
	// Options.Partitioned: a single analyzer's documents stay as they
	// were (see partitionQuery for partition 0).
	FieldPartition = "partition"
)

// KeywordFields are the exact-match fields a query may filter with field:value.
var keywordFields = []string{FieldCluster, FieldNode, FieldContainer, FieldFile, FieldStream,
	FieldSource, FieldLevel, FieldComponent, FieldProcess, FieldCause, FieldIP, FieldFields}

// numericFields may be compared with field:>N and friends.
var numericFields = []string{FieldPID, FieldRank}

// facetFields have doc values so that facets work on them; doc values of a
// field cost at every segment build and merge, so only the facets the UI
// and CLI show have them.
var facetFields = map[string]bool{FieldNode: true, FieldContainer: true, FieldSource: true, FieldLevel: true}

// NewMapping returns the lean index mapping: every field explicit, no
// catch-all `_all` field and no dynamic fields, because both roughly halve
// Bleve's indexing rate (anchors §2.5). Documents are built by docBuilder,
// which must agree with this mapping; the mapping itself serves the query
// side (analyzer per field, default field) and Bleve's metadata. Numbers
// and times are keywords here: they are indexed as prefix-coded terms that
// only the queries of ranges.go search.
func NewMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.DefaultAnalyzer = keyword.Name
	im.DefaultField = FieldMessage
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false

	dm := bleve.NewDocumentStaticMapping()
	for _, f := range append(append(slices.Clone(keywordFields), numericFields...), FieldTime, FieldTimeSort, FieldLine, FieldFileLine, FieldPartition) {
		fm := bleve.NewKeywordFieldMapping()
		fm.Store = false
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		fm.DocValues = facetFields[f] || f == FieldTimeSort
		dm.AddFieldMappingsAt(f, fm)
	}
	ev := bleve.NewKeywordFieldMapping()
	ev.Index = false
	ev.IncludeInAll = false
	ev.DocValues = false
	dm.AddFieldMappingsAt(FieldEvent, ev)

	mm := bleve.NewTextFieldMapping()
	mm.Analyzer = LogAnalyzer
	mm.Store = false
	mm.IncludeTermVectors = true // highlights are empty without them
	mm.IncludeInAll = false
	mm.DocValues = false
	dm.AddFieldMappingsAt(FieldMessage, mm)

	im.DefaultMapping = dm
	return im
}

// docBuilder turns events into Bleve documents directly (Batch.IndexAdvanced),
// skipping the reflection walk of MapDocument, which costs more than the
// indexing of these small documents. Every field is indexed only; what a
// hit shows is one stored value (see encodeHit).
type docBuilder struct {
	freqs *freqCache
	// partitioned indexes partition 0 too (Options.Partitioned).
	partitioned bool
}

func newDocBuilder(mapping.IndexMapping) docBuilder { return docBuilder{freqs: newFreqCache()} }

const (
	kwOpts       = bindex.IndexField
	kwFacetOpts  = bindex.IndexField | bindex.DocValues
	msgOpts      = bindex.IndexField | bindex.IncludeTermVectors
	timeSortOpts = bindex.IndexField | bindex.DocValues
	lineOpts     = bindex.IndexField
)

// docFields holds the fields of one document in one allocation.
type docFields struct {
	terms [18]termField
	n     int
	msg   messageField
	event storedField
	list  [24]document.Field
}

func (d *docFields) term() *termField {
	if d.n < len(d.terms) {
		d.n++
		return &d.terms[d.n-1]
	}
	return new(termField)
}

func (b docBuilder) build(ev *parsers.Event) *document.Document {
	h := HitFromEvent(ev)
	if h.Lines <= 1 {
		h.Lines = 0 // one line is the norm; the hit omits it
	}
	d := new(docFields)
	doc := document.NewDocument(ev.ID)
	doc.Fields = d.list[:0]
	kw := func(name, v string) {
		if v == "" {
			return
		}
		opts := kwOpts
		if facetFields[name] {
			opts = kwFacetOpts
		}
		f := d.term()
		if tfs := b.freqs.keyword(name, v); tfs != nil {
			f.shared(name, opts, tfs, len(v))
		} else {
			f.set(name, opts, []byte(v), v)
		}
		doc.AddField(f)
	}
	kw(FieldCluster, h.Cluster)
	kw(FieldNode, h.Node)
	kw(FieldContainer, h.Container)
	kw(FieldFile, h.File)
	kw(FieldStream, h.Stream)
	kw(FieldSource, h.Source)
	kw(FieldLevel, h.Level)
	kw(FieldComponent, h.Component)
	kw(FieldProcess, h.Process)
	kw(FieldIP, h.IP)
	kw(FieldCause, h.Cause)
	if len(h.Fields) > 0 {
		f := d.term()
		f.name, f.opts = FieldFields, kwOpts
		for k, v := range h.Fields {
			f.terms = append(f.terms, []byte(k+"="+v))
		}
		doc.AddField(f)
	}
	if !h.Time.IsZero() {
		ns := timeNanos(h.Time)
		f := d.term()
		f.shared(FieldTime, kwOpts, b.freqs.buckets(ns), 0)
		doc.AddField(f)
		doc.AddField(d.term().set(FieldTimeSort, timeSortOpts, intTerm(ns), ""))
	}
	if h.PID != 0 {
		doc.AddField(d.term().set(FieldPID, kwOpts, intTerm(int64(h.PID)), ""))
	}
	if h.Rank != nil {
		doc.AddField(d.term().set(FieldRank, kwOpts, intTerm(int64(*h.Rank)), ""))
	}
	if h.Partition != 0 || b.partitioned {
		// Few values, on every event of a partition: shared frequencies.
		v := string(intTerm(int64(h.Partition)))
		f := d.term()
		if tfs := b.freqs.keyword(FieldPartition, v); tfs != nil {
			f.shared(FieldPartition, kwOpts, tfs, len(v))
		} else {
			f.set(FieldPartition, kwOpts, []byte(v), v)
		}
		doc.AddField(f)
	}
	line := padLine(h.Line)
	doc.AddField(d.term().set(FieldLine, lineOpts, []byte(line), line))
	fl := fileLineKey(h.Node, h.File) + line
	doc.AddField(d.term().set(FieldFileLine, lineOpts, []byte(fl), fl))
	d.msg.text = []byte(h.Message)
	doc.AddField(&d.msg)
	d.event = storedField{name: FieldEvent, value: encodeHit(make([]byte, 0, 64+len(h.Message)+len(h.File)), &h)}
	doc.AddField(&d.event)
	return doc
}

// eventTime is the event's time, else the record's container time.
func eventTime(ev *parsers.Event) time.Time {
	if !ev.Time.IsZero() {
		return ev.Time
	}
	return ev.Record.Time
}

// fileLineKey is the prefix of a file's FieldFileLine terms.
func fileLineKey(node, file string) string {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(file))
	var b [17]byte
	hex.Encode(b[:16], binary.BigEndian.AppendUint64(nil, h.Sum64()))
	b[16] = ':'
	return string(b[:])
}

// padLine renders a line number so that byte order is numeric order.
func padLine(n int) string {
	var b [20]byte
	s := strconv.AppendInt(b[:0], int64(max(n, 0)), 10)
	return "0000000000"[min(len(s), 10):] + string(s)
}

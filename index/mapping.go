package index

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/datetime/timestamp/nanoseconds"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/numeric"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/faultline/faultline/parsers"
)

// Field names of an indexed event.
const (
	FieldCluster   = "cluster"
	FieldNode      = "node"
	FieldContainer = "container"
	FieldFile      = "file"
	FieldFileID    = "file_id"
	FieldStream    = "stream"
	FieldSource    = "source"
	FieldLevel     = "level"
	FieldComponent = "component"
	FieldProcess   = "process"
	FieldCause     = "cause"
	FieldIP        = "ip"
	FieldFields    = "fields"    // source-specific fields as "name=value" keywords
	FieldTime      = "time"      // datetime, indexed for ranges, stored
	FieldTimeSort  = "time_sort" // datetime by exact value, doc values: sorting and the histogram
	FieldPID       = "pid"
	FieldRank      = "rank"
	FieldLine      = "line"   // zero-padded keyword: one term instead of a numeric's sixteen
	FieldLines     = "lines"  // stored only
	FieldOffset    = "offset" // stored only: offsets exceed float64's exact range in principle
	FieldMessage   = "message"
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
// Bleve's indexing rate (anchors §2.5). Documents are built by buildDocument,
// which must agree with this mapping; the mapping itself serves the query
// side (analyzer per field, default field) and Bleve's metadata.
func NewMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.DefaultAnalyzer = keyword.Name
	im.DefaultField = FieldMessage
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false

	dm := bleve.NewDocumentStaticMapping()
	for _, f := range keywordFields {
		fm := bleve.NewKeywordFieldMapping()
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		fm.DocValues = facetFields[f]
		dm.AddFieldMappingsAt(f, fm)
	}
	for _, f := range numericFields {
		fm := bleve.NewNumericFieldMapping()
		fm.IncludeInAll = false
		fm.DocValues = false
		dm.AddFieldMappingsAt(f, fm)
	}
	fid := bleve.NewKeywordFieldMapping()
	fid.Index = false // stored for reference only: context goes by node and file
	fid.IncludeInAll = false
	fid.DocValues = false
	dm.AddFieldMappingsAt(FieldFileID, fid)
	for _, f := range []string{FieldLines, FieldOffset} {
		fm := bleve.NewNumericFieldMapping()
		fm.Index = false
		fm.IncludeInAll = false
		fm.DocValues = false
		dm.AddFieldMappingsAt(f, fm)
	}
	// The line is a fixed-width keyword: context needs ranges and order
	// within one file, which lexical order of padded numbers gives for one
	// term per document (a numeric field indexes sixteen).
	lm := bleve.NewKeywordFieldMapping()
	lm.IncludeInAll = false
	lm.DocValues = true
	dm.AddFieldMappingsAt(FieldLine, lm)

	// Time is two fields. Bleve's doc values of a datetime hold all its
	// sixteen precision-shifted terms, and sorting or faceting a sparse set
	// of hits decompresses every doc-value chunk: on 4M events that made a
	// 9k-hit query take 80 ms, nearly all of it in snappy. So ranges go to
	// "time" (no doc values) and sorting and the histogram to "time_sort"
	// (one term per event, doc values).
	tm := bleve.NewDateTimeFieldMapping()
	tm.IncludeInAll = false
	tm.DocValues = false
	dm.AddFieldMappingsAt(FieldTime, tm)
	ts := bleve.NewDateTimeFieldMapping()
	ts.IncludeInAll = false
	ts.Store = false
	ts.DocValues = true
	dm.AddFieldMappingsAt(FieldTimeSort, ts)

	mm := bleve.NewTextFieldMapping()
	mm.Analyzer = LogAnalyzer
	mm.Store = true
	mm.IncludeTermVectors = true // highlights are empty without them
	mm.IncludeInAll = false
	mm.DocValues = false
	dm.AddFieldMappingsAt(FieldMessage, mm)

	im.DefaultMapping = dm
	return im
}

// docBuilder turns events into Bleve documents directly (Batch.IndexAdvanced),
// skipping the reflection walk of MapDocument, which costs more than the
// indexing of these small documents.
type docBuilder struct {
	logAnalyzer     analysis.Analyzer
	keywordAnalyzer analysis.Analyzer
}

func newDocBuilder(im mapping.IndexMapping) docBuilder {
	return docBuilder{
		logAnalyzer:     im.AnalyzerNamed(LogAnalyzer),
		keywordAnalyzer: im.AnalyzerNamed(keyword.Name),
	}
}

const (
	kwOpts       = bindex.IndexField | bindex.StoreField
	kwFacetOpts  = bindex.IndexField | bindex.StoreField | bindex.DocValues
	numOpts      = bindex.IndexField | bindex.StoreField
	storedOnly   = bindex.StoreField
	msgOpts      = bindex.IndexField | bindex.StoreField | bindex.IncludeTermVectors
	timeOpts     = bindex.IndexField | bindex.StoreField
	timeSortOpts = bindex.IndexField | bindex.DocValues
	lineOpts     = bindex.IndexField | bindex.StoreField | bindex.DocValues
)

func (b docBuilder) build(ev *parsers.Event) *document.Document {
	doc := document.NewDocument(ev.ID)
	kw := func(name, v string) {
		if v == "" {
			return
		}
		opts := kwOpts
		if facetFields[name] {
			opts = kwFacetOpts
		}
		doc.AddField(document.NewTextFieldCustom(name, nil, []byte(v), opts, b.keywordAnalyzer))
	}
	kw(FieldCluster, ev.Cluster)
	kw(FieldNode, ev.Node)
	kw(FieldContainer, ev.Container)
	kw(FieldFile, ev.File)
	if ev.FileID != "" && ev.FileID != ev.File {
		doc.AddField(document.NewTextFieldCustom(FieldFileID, nil, []byte(ev.FileID), storedOnly, b.keywordAnalyzer))
	}
	kw(FieldStream, ev.Stream)
	kw(FieldSource, ev.Source)
	kw(FieldLevel, ev.Level)
	kw(FieldComponent, ev.Component)
	kw(FieldProcess, ev.Process)
	kw(FieldIP, ev.IP)
	kw(FieldCause, ev.Fields["cause"])
	if len(ev.Fields) > 0 {
		keys := make([]string, 0, len(ev.Fields))
		for k := range ev.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys) // stable array positions
		for i, k := range keys {
			doc.AddField(document.NewTextFieldCustom(FieldFields, []uint64{uint64(i)},
				[]byte(k+"="+ev.Fields[k]), kwOpts, b.keywordAnalyzer))
		}
	}
	t := eventTime(ev)
	if !t.IsZero() {
		// The unix_nano layout keeps full precision and stores 9 bytes
		// instead of a layout string per document.
		if f, err := document.NewDateTimeFieldWithIndexingOptions(FieldTime, nil, t, nanoseconds.Name, timeOpts); err == nil {
			doc.AddField(f)
			doc.AddField(newExactDateTimeField(FieldTimeSort, t))
		}
	}
	if ev.PID != 0 {
		doc.AddField(newExactNumericField(FieldPID, float64(ev.PID), numOpts))
	}
	if r, ok := ev.Fields["rank"]; ok {
		if n, err := strconv.Atoi(r); err == nil {
			doc.AddField(document.NewNumericFieldWithIndexingOptions(FieldRank, nil, float64(n), numOpts))
		}
	}
	doc.AddField(document.NewTextFieldCustom(FieldLine, nil, []byte(padLine(ev.Line)), lineOpts, b.keywordAnalyzer))
	if ev.Lines > 1 {
		doc.AddField(document.NewNumericFieldWithIndexingOptions(FieldLines, nil, float64(ev.Lines), storedOnly))
	}
	doc.AddField(document.NewNumericFieldWithIndexingOptions(FieldOffset, nil, float64(ev.Offset), storedOnly))
	msg := ev.Message
	if msg == "" {
		msg = ev.Text
	}
	doc.AddField(document.NewTextFieldCustom(FieldMessage, nil, []byte(msg), msgOpts, b.logAnalyzer))
	return doc
}

// eventTime is the event's time, else the record's container time.
func eventTime(ev *parsers.Event) time.Time {
	if !ev.Time.IsZero() {
		return ev.Time
	}
	return ev.Record.Time
}

// padLine renders a line number so that byte order is numeric order.
func padLine(n int) string {
	return fmt.Sprintf("%010d", max(n, 0))
}

// exactNumericField is a numeric field indexed by its exact value only.
// Bleve indexes a number as sixteen precision-shifted terms so that ranges
// are cheap; for a pid, which people look up but never range over, that is
// a quarter of a log event's terms for nothing. Exact queries (pid:1234 is
// the range [1234,1234]) need only the unshifted term. Stored value and type
// are those of a normal numeric field.
type exactNumericField struct {
	*document.NumericField
	length int
	freqs  bindex.TokenFrequencies
}

func newExactNumericField(name string, v float64, opts bindex.FieldIndexingOptions) *exactNumericField {
	return &exactNumericField{NumericField: document.NewNumericFieldWithIndexingOptions(name, nil, v, opts)}
}

func (n *exactNumericField) Analyze() {
	tokens := analysis.TokenStream{&analysis.Token{
		Start: 0, End: len(n.Value()), Term: n.Value(), Position: 1, Type: analysis.Numeric,
	}}
	n.length = 1
	n.freqs = analysis.TokenFrequency(tokens, nil, n.Options())
}

func (n *exactNumericField) AnalyzedLength() int { return n.length }

func (n *exactNumericField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return n.freqs }

// exactDateTimeField is a datetime indexed (and so doc-valued) by its exact
// value only; see the time fields in NewMapping.
type exactDateTimeField struct {
	*document.DateTimeField
	term   []byte
	length int
	freqs  bindex.TokenFrequencies
}

func newExactDateTimeField(name string, t time.Time) *exactDateTimeField {
	f, _ := document.NewDateTimeFieldWithIndexingOptions(name, nil, t, nanoseconds.Name, timeSortOpts)
	return &exactDateTimeField{DateTimeField: f, term: numeric.MustNewPrefixCodedInt64(t.UnixNano(), 0)}
}

func (n *exactDateTimeField) Analyze() {
	tokens := analysis.TokenStream{&analysis.Token{
		Start: 0, End: len(n.term), Term: n.term, Position: 1, Type: analysis.DateTime,
	}}
	n.length = 1
	n.freqs = analysis.TokenFrequency(tokens, nil, n.Options())
}

func (n *exactDateTimeField) AnalyzedLength() int { return n.length }

func (n *exactDateTimeField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return n.freqs }

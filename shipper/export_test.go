package shipper_test

import "github.com/faultline/faultline/parsers"

func recordID(r parsers.Record) string { return parsers.RecordID(r.Node, r.FileID, r.Offset) }

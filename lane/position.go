package lane

// Engine positions of records read from the stream (rule.Engine.ObserveAt,
// rule.Checkpoint): the stream sequence of the message, then the record's
// index in the message (a launch may begin in the middle of a batch; the
// records before it belong to the launch before). RecordBits hold a
// million records, more than a message can carry; checkpoints say which
// they were written with.
const RecordBits = 20

// StreamPos is the position of record i of the message at sequence seq.
func StreamPos(seq uint64, record int) uint64 {
	return seq<<RecordBits | uint64(min(record, 1<<RecordBits-1))
}

// PosSeq is the stream sequence of a position.
func PosSeq(pos uint64) uint64 { return pos >> RecordBits }

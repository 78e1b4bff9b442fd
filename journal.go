package supplyplan

import "bufio"

// Journal is the durable log behind every journaled actor (a tenant, the platform, an outbound
// owner): one stream of numbered entries per actor, plus the latest snapshot of its state. The
// actor package depends on this interface only. streams.Journal is the local implementation (one
// directory per stream in the data dir, group-committed with fsync); streams.KafkaJournal is the
// distributed mode's (one Kafka partition per stream, written by the partition's owner only: an
// owner fenced by a newer one gets errors from every method, and what it wrote after is never
// loaded).
//
// The actor calls Append and Barrier from its own goroutine and never waits on them: done runs
// later, on the journal's goroutine, and must only hand the result back (it must not block).
type Journal interface {
	// Append queues payload as entry seq of stream; seq increases by one per stream. done is
	// called exactly once, with nil when the entry is durable (it survives a crash) or with the
	// error that made it fail. The journal may read payload until done is called: the caller
	// must not change it before.
	Append(stream string, seq uint64, payload []byte, done func(error))
	// Barrier calls done once every entry appended to stream before the call is durable (or has
	// failed: done gets that error). An implementation may wait for more than stream's entries.
	Barrier(stream string, done func(error))
	// Load replays stream: onSnapshot with the latest snapshot if there is one, then onEntry for
	// every entry after it, in order. It runs before the first Append to the stream; an error of
	// a callback stops the load and is returned.
	Load(stream string, onSnapshot func(seq uint64, data []byte) error,
		onEntry func(seq uint64, payload []byte) error) (JournalLoad, error)
	// SaveSnapshot stores data as the state of stream after entry seq, durably; entries up to
	// seq may then be dropped. It may run concurrently with appends to the stream.
	SaveSnapshot(stream string, seq uint64, data []byte) error
}

// SnapshotStreamer is a Journal that can take a snapshot as a stream of bytes rather than one
// slice: write writes the snapshot into w (SaveSnapshot's data, in pieces), and the snapshot's size
// in bytes is returned. The state's actor uses it when its journal has it: a snapshot of the whole
// state then never sits in memory at once.
type SnapshotStreamer interface {
	SaveSnapshotStream(stream string, seq uint64, write func(w *bufio.Writer) error) (int, error)
}

// JournalLoad summarizes a Journal.Load.
type JournalLoad struct {
	SnapshotSeq uint64 // the entry the snapshot was taken after (0: none)
	LastSeq     uint64 // the newest entry read
	Entries     int    // entries replayed after the snapshot
	Truncated   int64  // bytes of a torn tail that were cut (local journal)
}

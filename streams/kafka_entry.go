package streams

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Journal entries larger than one Kafka record.
//
// A broker refuses a record batch above its message.max.bytes (1 MiB by default, kfake's too),
// and one import chunk of 5,000 orders is a journal entry of about 10 MB. An entry over
// KafkaJournalConfig.EntryChunk bytes is therefore written as n part records, in order, in the
// same transaction: each carries the entry's stream, seq and epoch headers and a "part" header
// "<i>/<n>" (0-based i). A reader rebuilds the entry from its parts and applies it only with its
// last part: read_committed never shows the parts of an aborted transaction, and a prefix of parts
// without the last one (a torn entry) is dropped, never applied. Records without a "part" header
// are whole entries, as every entry was before (journals written then read the same).

// partHeader is the header of a part record of a split entry.
const partHeader = "part"

// DefaultEntryChunk is the largest journal record value: entries above it are split.
const DefaultEntryChunk = 512 << 10

func partValue(i, n int) []byte {
	return []byte(strconv.Itoa(i) + "/" + strconv.Itoa(n))
}

// parsePart reads a "part" header value "<i>/<n>" (0 <= i < n, n >= 2).
func parsePart(v []byte) (i, n int, err error) {
	a, b, ok := strings.Cut(string(v), "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 2 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("bad part header %q", v)
	}
	return i, n, nil
}

// entryAssembler rebuilds the entries of one stream from its records, read in order.
type entryAssembler struct {
	active bool
	seq    uint64
	n      int // parts of the entry being assembled
	next   int // the part expected next
	buf    []byte
	torn   int // entries dropped without their last part
}

// add takes the next record of the stream (h its parsed headers). It returns the entry's payload
// when r completes one: a whole record, or the last part of a split entry. A part 0, or a whole
// record, arriving while an entry is incomplete drops that entry (torn: it is never applied). A
// part that is not the next of the entry being assembled is an error: parts of one entry are
// written in order, in one transaction.
func (a *entryAssembler) add(r *kgo.Record, h journalHeaders) ([]byte, bool, error) {
	if h.parts == 0 || h.part == 0 {
		if a.active {
			a.torn++
			a.active, a.buf = false, nil
		}
		if h.parts == 0 {
			return r.Value, true, nil
		}
		a.active, a.seq, a.n, a.next = true, h.seq, h.parts, 1
		// Sized for the whole entry, within reason: the header is data, not a promise.
		a.buf = append(make([]byte, 0, len(r.Value)*min(h.parts, 64)), r.Value...)
		return nil, false, nil
	}
	if !a.active || h.seq != a.seq || h.parts != a.n || h.part != a.next {
		return nil, false, fmt.Errorf("journal record at %d: part %d/%d of entry %d out of order (expected part %d/%d of entry %d)",
			r.Offset, h.part, h.parts, h.seq, a.next, a.n, a.seq)
	}
	a.buf = append(a.buf, r.Value...)
	a.next++
	if a.next < a.n {
		return nil, false, nil
	}
	out := a.buf
	a.active, a.buf = false, nil
	return out, true, nil
}

// entryRecords returns the records of one journal entry: one record, or its parts when payload is
// over chunk bytes. The last record is the entry's (its offset ends the entry).
func entryRecords(topic string, p int32, stream string, seq uint64, epoch, payload []byte, chunk int) []*kgo.Record {
	hs := func(extra ...kgo.RecordHeader) []kgo.RecordHeader {
		return append([]kgo.RecordHeader{{Key: "stream", Value: []byte(stream)},
			{Key: "seq", Value: []byte(strconv.FormatUint(seq, 10))}, {Key: "epoch", Value: epoch}}, extra...)
	}
	if len(payload) <= chunk {
		return []*kgo.Record{{Topic: topic, Partition: p, Key: []byte(stream), Value: payload, Headers: hs()}}
	}
	n := (len(payload) + chunk - 1) / chunk
	out := make([]*kgo.Record, 0, n)
	for i := range n {
		v := payload[i*chunk : min((i+1)*chunk, len(payload))]
		out = append(out, &kgo.Record{Topic: topic, Partition: p, Key: []byte(stream), Value: v,
			Headers: hs(kgo.RecordHeader{Key: partHeader, Value: partValue(i, n)})})
	}
	return out
}

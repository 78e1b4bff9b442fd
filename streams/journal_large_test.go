package streams

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// Entries of a megabyte or more are written from the caller's payload rather than copied into the
// segment buffer; in a batch mixed with small entries of the same and other streams, every entry
// reads back in order, whole, after a reopen.
func TestJournalLargeEntries(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 8<<20)
	payload := func(stream string, seq uint64) []byte {
		if seq%3 == 0 {
			return bytes.Repeat([]byte(fmt.Sprintf("%s-%d|", stream, seq)), (largePayload+int(seq)*1000)/8)
		}
		return []byte(fmt.Sprintf("%s-%d", stream, seq))
	}
	var wg sync.WaitGroup
	for _, stream := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs := make(chan error, 12)
			for seq := uint64(1); seq <= 12; seq++ {
				j.Append(stream, seq, payload(stream, seq), func(err error) { errs <- err })
			}
			for range 12 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = mustJournal(t, dir, 8<<20)
	for _, stream := range []string{"a", "b"} {
		var seqs []uint64
		_, err := j.Load(stream, nil, func(seq uint64, p []byte) error {
			if !bytes.Equal(p, payload(stream, seq)) {
				return fmt.Errorf("entry %d of %s differs (%d bytes)", seq, stream, len(p))
			}
			seqs = append(seqs, seq)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seqs) != 12 || seqs[0] != 1 || seqs[11] != 12 {
			t.Fatalf("stream %s: entries %v", stream, seqs)
		}
	}
}

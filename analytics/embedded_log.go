package analytics

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"unsafe"

	"github.com/supplyplan/supplyplan"
)

// On-disk format of the embedded store. A log file and a snapshot file are both a sequence of frames
//
//	[payload length uint32 LE][crc32c(payload) uint32 LE][payload]
//
// and a payload is one record: a kind byte followed by its fields (strings are uvarint length +
// bytes, days are zigzag varints, numbers are float64 LE). Log records are the writes as they
// were requested (upsert, signals); applying them in order rebuilds the index, and a write's
// effect is decided by applying its record (signal dedup included), live and on replay alike.
// Snapshot records (cells, signal ids, end) describe the state instead.

const (
	frameHeaderLen  = 8
	maxFramePayload = 256 << 20
	// maxRecordItems caps the rows or signals of one record so that frames stay small.
	maxRecordItems = 1 << 16
)

const (
	recUpsert  byte = 1 // org, n, n x (flags, [sku, location, channel], day, actual, forecast)
	recSignals byte = 2 // org, n, n x (id, sku, location, channel, day, quantity)
	recCells   byte = 3 // org, nseries, nseries x (sku, location, channel, ncells, ncells x cell)
	recSigIDs  byte = 4 // org, n, n x id (snapshots of earlier versions; read only)
	recEnd     byte = 5 // last frame of a complete snapshot
	recSigKeys byte = 6 // org, n, n x 16-byte key of a signal id
	recSeries  byte = 7 // org, nseries, nseries x (sku, location, channel, series: see encodeSeries)
	// recSigKeyDays: org, has newest (0 or 1), [newest day], n, n x (16-byte key of a signal id, day
	// of its week). The newest day is that of the newest week of the organization's applied signals.
	// The set keeps 14 bytes of a key (sigSet): the last two are written as zeros.
	recSigKeyDays byte = 8
)

// Flags of a cell in a recCells record (snapshots of earlier versions).
const (
	oldCellImported = 1 << iota // the week was imported: actual and forecast follow
	oldCellStockout             // imported with Stockout
	oldCellSignals              // signals were added: their sum follows
)

// sigKey identifies an applied signal id in the dedup set: the first 16 bytes of its SHA-256. A set
// of fixed-size keys holds no pointers, so the garbage collector never scans it (a set of id strings
// grew into the collector's largest cost), and a collision needs about 2^64 ids.
type sigKey [16]byte

func keyOf(id string) sigKey {
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(id), len(id)))
	return sigKey(sum[:16])
}

func (d *dec) sigKey() sigKey {
	var k sigKey
	if len(d.b) < len(k) {
		d.fail()
		return k
	}
	copy(k[:], d.b)
	d.b = d.b[len(k):]
	return k
}

const (
	rowStockout = 1 << 0
	rowSameKey  = 1 << 1 // the row's key is the previous row's: not repeated
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// beginFrame reserves a frame header at the end of buf.
func beginFrame(buf []byte) ([]byte, int) {
	start := len(buf)
	return append(buf, make([]byte, frameHeaderLen)...), start
}

// endFrame fills in the header of the frame that starts at start.
func endFrame(buf []byte, start int) []byte {
	payload := buf[start+frameHeaderLen:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, castagnoli))
	return buf
}

func putString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func putFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// encodeUpsert appends the frames of an UpsertWeeks call (rows already validated).
func encodeUpsert(buf []byte, org string, rows []supplyplan.DemandRow) []byte {
	for len(rows) > 0 {
		n := min(len(rows), maxRecordItems)
		var start int
		buf, start = beginFrame(buf)
		buf = append(buf, recUpsert)
		buf = putString(buf, org)
		buf = binary.AppendUvarint(buf, uint64(n))
		var prev supplyplan.DemandKey
		for i := range rows[:n] {
			r := &rows[i]
			key := supplyplan.DemandKey{SKU: r.SKU, Location: r.Location, Channel: normChannel(r.Channel)}
			var flags byte
			if r.Stockout {
				flags |= rowStockout
			}
			same := i > 0 && key == prev
			if same {
				flags |= rowSameKey
			}
			buf = append(buf, flags)
			if !same {
				buf = putString(buf, key.SKU)
				buf = putString(buf, key.Location)
				buf = putString(buf, key.Channel)
				prev = key
			}
			buf = binary.AppendVarint(buf, int64(weekDay(r.Week)))
			buf = putFloat(buf, r.Actual)
			buf = putFloat(buf, r.Forecasted)
		}
		buf = endFrame(buf, start)
		rows = rows[n:]
	}
	return buf
}

// encodeSignals appends the frames of an AddSignals call (signals already validated).
func encodeSignals(buf []byte, org string, signals []supplyplan.DemandSignal) []byte {
	for len(signals) > 0 {
		n := min(len(signals), maxRecordItems)
		var start int
		buf, start = beginFrame(buf)
		buf = append(buf, recSignals)
		buf = putString(buf, org)
		buf = binary.AppendUvarint(buf, uint64(n))
		for i := range signals[:n] {
			s := &signals[i]
			buf = putString(buf, s.SignalID)
			buf = putString(buf, s.SKU)
			buf = putString(buf, s.Location)
			buf = putString(buf, normChannel(s.Channel))
			buf = binary.AppendVarint(buf, int64(weekDay(s.OccurredAt)))
			buf = putFloat(buf, s.Quantity)
		}
		buf = endFrame(buf, start)
		signals = signals[n:]
	}
	return buf
}

// encodeSeries appends a series in the layout of its columns, trimmed to its cells: n (uvarint),
// day0 (varint), the widths (wOff, wAct, wFc, wSig: one byte each), a stockout byte (0 or 1),
// then each present column for n slots.
func encodeSeries(buf []byte, s *series) []byte {
	n := int(s.n)
	buf = binary.AppendUvarint(buf, uint64(n))
	buf = binary.AppendVarint(buf, int64(s.day0))
	stock := byte(0)
	if s.stock {
		stock = 1
	}
	buf = append(buf, s.wOff, s.wAct, s.wFc, s.wSig, stock)
	act, fc, sig, stk := s.columns()
	buf = append(buf, s.data[:n*int(s.wOff)]...)
	buf = append(buf, s.data[act:act+n*int(s.wAct)]...)
	buf = append(buf, s.data[fc:fc+n*fcWidth(s.wFc)]...)
	buf = append(buf, s.data[sig:sig+n*int(s.wSig)]...)
	if s.stock {
		bits := s.data[stk : stk+(n+7)/8]
		buf = append(buf, bits...)
		if n%8 != 0 { // slots past n hold no cell
			buf[len(buf)-1] &= 1<<(n%8) - 1
		}
	}
	return buf
}

func validWidth(w uint8) bool { return w == 0 || w == 1 || w == 2 || w == 4 || w == 8 }

// decodeSeries reads what encodeSeries wrote (keys and links are the caller's).
func decodeSeries(d *dec) (series, error) {
	var s series
	n := d.count()
	day0 := d.day()
	wOff, wAct, wFc, wSig, stock := d.byte(), d.byte(), d.byte(), d.byte(), d.byte()
	if d.err != nil {
		return s, d.err
	}
	if n == 0 || n > maxCells || (wOff != 0 && wOff != 2 && wOff != 4) || !validWidth(wAct) ||
		(wFc != fcSame && !validWidth(wFc)) || !validWidth(wSig) || stock > 1 {
		return s, errCorrupt
	}
	s = series{day0: day0, n: uint16(n), cap: uint16(n), wOff: wOff, wAct: wAct, wFc: wFc, wSig: wSig, stock: stock == 1}
	size := n * (int(wOff) + int(wAct) + fcWidth(wFc) + int(wSig))
	if s.stock {
		size += (n + 7) / 8
	}
	if len(d.b) < size {
		d.fail()
		return s, d.err
	}
	s.data = slices.Clone(d.b[:size])
	d.b = d.b[size:]
	// Cells must be in week order and inside the weeks a store holds.
	prev := int64(math.MinInt64)
	for i := 0; i < n; i++ {
		day := int64(s.day0)
		switch wOff {
		case 2:
			day += int64(binary.LittleEndian.Uint16(s.data[2*i:]))
		case 4:
			day += int64(binary.LittleEndian.Uint32(s.data[4*i:]))
		default:
			day += 7 * int64(i)
		}
		if day <= prev || day > math.MaxInt32 {
			return s, errCorrupt
		}
		prev = day
	}
	return s, nil
}

var errCorrupt = errors.New("corrupt record")

// dec reads one record payload. Its strings alias the payload (view) unless copied.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}

func (d *dec) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) day() int32 {
	v, n := binary.Varint(d.b)
	if n <= 0 || v < math.MinInt32 || v > math.MaxInt32 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return int32(v)
}

func (d *dec) float() float64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

// view returns a string that aliases the payload: valid only while the payload buffer is, so it
// must be copied (cloneString, map assignment) before it is kept.
func (d *dec) view() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	if n == 0 {
		return ""
	}
	s := unsafe.String(&d.b[0], int(n))
	d.b = d.b[n:]
	return s
}

// count reads an item count, bounded by what the remaining bytes could hold.
func (d *dec) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	return int(n)
}

// frameReader reads the frames of one file.
type frameReader struct {
	r   *bufio.Reader
	off int64 // offset of the next frame
	buf []byte
}

func newFrameReader(f *os.File) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(f, 1<<20)}
}

// errTorn marks a file that ends in an incomplete or corrupt frame (at frameReader.off).
var errTorn = errors.New("torn frame")

// next returns the next payload (valid until the next call), io.EOF at a clean end, errTorn at a
// damaged frame.
func (fr *frameReader) next() ([]byte, error) {
	var h [frameHeaderLen]byte
	n, err := io.ReadFull(fr.r, h[:])
	if err == io.EOF {
		return nil, io.EOF
	}
	if err == io.ErrUnexpectedEOF {
		return nil, errTorn
	}
	if err != nil {
		return nil, fmt.Errorf("read frame: %w", err)
	}
	_ = n
	size := binary.LittleEndian.Uint32(h[0:4])
	sum := binary.LittleEndian.Uint32(h[4:8])
	if size == 0 || size > maxFramePayload {
		return nil, errTorn
	}
	if cap(fr.buf) < int(size) {
		fr.buf = make([]byte, size)
	}
	fr.buf = fr.buf[:size]
	if _, err := io.ReadFull(fr.r, fr.buf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errTorn
		}
		return nil, fmt.Errorf("read frame: %w", err)
	}
	if crc32.Checksum(fr.buf, castagnoli) != sum {
		return nil, errTorn
	}
	fr.off += frameHeaderLen + int64(size)
	return fr.buf, nil
}

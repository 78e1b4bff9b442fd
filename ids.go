package supplyplan

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

var idMu sync.Mutex
var idLastMs int64
var idLastRand [10]byte

// NewID returns a new identifier: prefix + "_" + 26 characters that sort by creation time
// (48-bit milliseconds, then 80 bits that are random for a new millisecond and increment within one).
func NewID(prefix string) string {
	var b [16]byte
	ms := time.Now().UnixMilli()
	idMu.Lock()
	if ms <= idLastMs {
		ms = idLastMs
		for i := 9; i >= 0; i-- { // increment keeps ids monotonic within a millisecond
			idLastRand[i]++
			if idLastRand[i] != 0 {
				break
			}
		}
	} else {
		idLastMs = ms
		_, _ = rand.Read(idLastRand[:])
	}
	binary.BigEndian.PutUint64(b[0:8], uint64(ms)<<16)
	copy(b[6:], idLastRand[:])
	idMu.Unlock()
	var sb strings.Builder // one allocation per id
	sb.Grow(len(prefix) + 27)
	sb.WriteString(prefix)
	sb.WriteByte('_')
	out := encode128(b)
	sb.Write(out[:])
	return sb.String()
}

// encode128 renders 128 bits as 26 Crockford base32 characters (top 2 bits padded).
func encode128(b [16]byte) [26]byte {
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return out
}

// RandomToken returns n random bytes encoded with an URL-safe alphabet of 62 characters.
func RandomToken(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, n)
	buf := make([]byte, n*2)
	filled := 0
	for filled < n {
		_, _ = rand.Read(buf)
		for _, c := range buf {
			if c >= 248 { // 248 = 4*62: reject to keep the distribution uniform
				continue
			}
			out[filled] = alphabet[int(c)%62]
			filled++
			if filled == n {
				break
			}
		}
	}
	return string(out)
}

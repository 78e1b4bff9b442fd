package supplyplan

import (
	"embed"
	"fmt"
	"slices"
	"sync"
	"time"
)

// The built-in loops: real workflows of the four planning domains, shipped in the binary
// (loops/*.json) and published into the global scope at start. docs/loops.md describes them.

//go:embed loops/*.json
var builtinLoopFS embed.FS

// builtinLoopFiles are the embedded manifests, in publishing order.
var builtinLoopFiles = []string{"loops/procurement.json", "loops/orders.json", "loops/returns.json", "loops/quality.json"}

// BuiltinLoop is one embedded manifest.
type BuiltinLoop struct {
	Name     string
	Version  string
	Manifest []byte
}

var builtinLoops = sync.OnceValues(func() ([]BuiltinLoop, error) {
	out := make([]BuiltinLoop, 0, len(builtinLoopFiles))
	for _, f := range builtinLoopFiles {
		data, err := builtinLoopFS.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("built-in loop %s: %w", f, err)
		}
		m, err := ParseLoopManifest(data)
		if err != nil {
			return nil, fmt.Errorf("built-in loop %s: %w", f, err)
		}
		out = append(out, BuiltinLoop{Name: m.Name, Version: m.Version, Manifest: data})
	}
	return out, nil
})

// BuiltinLoops returns the embedded loops (an error only if a shipped manifest is invalid, which
// the package's tests rule out).
func BuiltinLoops() ([]BuiltinLoop, error) {
	loops, err := builtinLoops()
	return slices.Clone(loops), err
}

func isBuiltinLoopVersion(name, version string) bool {
	loops, _ := builtinLoops()
	return slices.ContainsFunc(loops, func(b BuiltinLoop) bool { return b.Name == name && b.Version == version })
}

// BuiltinLoopPublisher is the publisher recorded for built-in loops.
const BuiltinLoopPublisher = "system:builtin"

// EnsureBuiltinLoops returns the records that publish the built-in loops into the global catalog
// (none when they are already there: publishing is idempotent). A built-in manifest that changed
// without a new version is an error, since published versions never change.
func (s *LoopCatalogState) EnsureBuiltinLoops(signer *LoopSigner, now time.Time) ([]Record, error) {
	if s.Scope != GlobalLoopScope {
		return nil, fmt.Errorf("built-in loops belong to the %s scope, not %s", GlobalLoopScope, s.Scope)
	}
	loops, err := builtinLoops()
	if err != nil {
		return nil, err
	}
	var recs []Record
	for _, b := range loops {
		_, r, err := s.Publish(LoopPublishRequest{Name: b.Name, Version: b.Version, Manifest: b.Manifest, Publisher: BuiltinLoopPublisher}, signer, now)
		if err != nil {
			return nil, fmt.Errorf("publish built-in loop %s@%s (a changed built-in manifest needs a new version): %w", b.Name, b.Version, err)
		}
		recs = append(recs, r...)
	}
	return recs, nil
}

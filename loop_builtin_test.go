package supplyplan

import (
	"os"
	"strings"
	"testing"
)

// TestLoopsDocDescribesBuiltinLoops keeps docs/loops.md true to loops/*.json: each built-in
// loop's section lists its states and every transition with its from and to states.
func TestLoopsDocDescribesBuiltinLoops(t *testing.T) {
	doc, err := os.ReadFile("docs/loops.md")
	if err != nil {
		t.Fatal(err)
	}
	loops, err := BuiltinLoops()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range loops {
		m, err := ParseLoopManifest(b.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		head := "### `" + m.Name + "` (" + string(m.Domain) + ")"
		start := strings.Index(string(doc), head)
		if start < 0 {
			t.Errorf("docs/loops.md has no section %q", head)
			continue
		}
		section := string(doc)[start+len(head):]
		if end := strings.Index(section, "\n### "); end >= 0 {
			section = section[:end]
		}
		flat := strings.Join(strings.Fields(section), " ")
		var states []string
		for _, s := range m.States {
			states = append(states, "`"+s+"`")
		}
		if !strings.Contains(flat, "States: "+strings.Join(states, ", ")+".") {
			t.Errorf("%s: the states line does not list %v", m.Name, m.States)
		}
		for _, tr := range m.Transitions {
			var from []string
			for _, f := range tr.From {
				from = append(from, "`"+f+"`")
			}
			row := "| `" + tr.Name + "` | " + strings.Join(from, ", ") + " → `" + tr.To + "` | " + strings.Join(tr.Roles, ", ") + " |"
			if !strings.Contains(flat, row) {
				t.Errorf("%s: no row %q", m.Name, row)
			}
		}
		for _, to := range m.Timeouts {
			if !strings.Contains(flat, "`"+to.State+"` after `"+to.After+"` fires `"+to.Transition+"`") {
				t.Errorf("%s: timeout of %s not described", m.Name, to.State)
			}
		}
	}
}

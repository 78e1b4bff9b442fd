package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan/streams"
)

// `supplyplan move` moves an organization of a running deployment (three distributed processes)
// to another partition with its state: the move is carried out by the nodes, audited with who and
// why, every write acknowledged before it is still there once, the organization is served from
// its new partition and takes writes again; --list prints the audit; bad flags name the flag.
func TestMoveCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	d := startDistNodes(t, 3, 12)
	orgs := d.createOrgs(3)
	var l writeLog
	for i := range 30 {
		l.write(d, orgs, i%3, i%3, 30*time.Second)
	}
	l.inflight.Wait()
	org := orgs[0].id
	from, err := d.dir.Partition(t.Context(), org)
	if err != nil {
		t.Fatal(err)
	}
	to := (from + 5) % 12
	brokers := strings.Join(d.brokers, ",")
	var out, errOut bytes.Buffer
	if err := run([]string{"move", "--kafka-brokers", brokers, "--journal-partitions", "12", "--org", org,
		"--to", fmt.Sprint(to), "--by", "ops@example.com", "--reason", "rebalance", "--wait", "2m"}, &out, &errOut); err != nil {
		t.Fatalf("move: %v\n%s%s", err, out.String(), errOut.String())
	}
	var m streams.Move
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("move output %q: %v", out.String(), err)
	}
	if m.Organization != org || m.From != from || m.To != to || m.By != "ops@example.com" || m.Reason != "rebalance" ||
		m.State != streams.MoveDone || m.Ready == nil || m.Done == nil {
		t.Fatalf("move record %+v, want %s from %d to %d by ops@example.com, done", m, org, from, to)
	}
	eventually(t, 30*time.Second, func() error {
		if p, err := d.dir.Partition(t.Context(), org); err != nil || p != to {
			return fmt.Errorf("placement of %s: %d %v, want %d", org, p, err, to)
		}
		return nil
	})
	// Served from the new partition through every node, and writable again.
	for i := range 9 {
		a := l.write(d, orgs, 0, i%3, 30*time.Second)
		eventually(t, 30*time.Second, func() error {
			if ok, _ := l.acknowledged(a); !ok {
				a = l.write(d, orgs, 0, i%3, 30*time.Second) // a 503 while the owner resumes it
				return fmt.Errorf("write %d after the move not acknowledged", i)
			}
			return nil
		})
	}
	l.inflight.Wait()
	attempts, acked, _ := l.check(t, d, orgs, []int{0, 1, 2})
	t.Logf("moved %s from partition %d to %d; %d writes sent, %d acknowledged, all present once", org, from, to, attempts, acked)
	if node, p, _ := d.owner(org); node < 0 || p != to {
		t.Fatalf("owner of %s after the move: node %d, partition %d (want %d)", org, node, p, to)
	}

	out.Reset()
	if err := run([]string{"move", "--kafka-brokers", brokers, "--journal-partitions", "12", "--org", org, "--list"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Placement streams.Placement
		Moves     []streams.Move
	}
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil {
		t.Fatalf("list output %q: %v", out.String(), err)
	}
	if listed.Placement.Partition != to || len(listed.Moves) != 1 || listed.Moves[0].ID != m.ID || listed.Moves[0].Reason != "rebalance" {
		t.Fatalf("list: %+v", listed)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--org", org, "--to", "12", "--by", "x", "--reason", "y"}, "--to"},
		{[]string{"--org", org, "--to", "1", "--reason", "y"}, "--by"},
		{[]string{"--org", org, "--to", "1", "--by", "x"}, "--reason"},
		{[]string{"--to", "1", "--by", "x", "--reason", "y"}, "--org"},
		{[]string{"--org", "org_nobody", "--to", "1", "--by", "x", "--reason", "y", "--wait", "10s"}, "not placed"},
	} {
		err := run(append([]string{"move", "--kafka-brokers", brokers, "--journal-partitions", "12"}, c.args...), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("move %v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan/streams"
)

// `supplyplan move`: the operator's command for moving an organization to another journal
// partition with its state (docs/distributed.md, "Moves with state"), and for reading the
// organization's placement and the audit records of its moves.

const moveUsage = `Usage:
  supplyplan move --kafka-brokers <brokers> --org <organization id> --to <partition> --by <who> --reason <why>
      move the organization, with its state, to journal partition <partition> of a distributed
      deployment, and wait until the nodes have carried it out (the organization answers 503 with
      Retry-After: 1 meanwhile); prints the move's audit record as JSON
  supplyplan move --kafka-brokers <brokers> --org <organization id> --list
      print the organization's placement and every move of it (who, why, when, each step) as JSON
`

func moveCommand(args []string, stdout, stderr io.Writer) error {
	var env envReader
	fs := flag.NewFlagSet("move", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("kafka-brokers", env.str("SUPPLYPLAN_KAFKA_BROKERS", ""), "the deployment's Kafka brokers, comma-separated (SUPPLYPLAN_KAFKA_BROKERS)")
	parts := fs.Int("journal-partitions", env.int("SUPPLYPLAN_JOURNAL_PARTITIONS", 64), "the deployment's journal partitions (SUPPLYPLAN_JOURNAL_PARTITIONS)")
	org := fs.String("org", "", "the organization's id (org_...)")
	to := fs.Int("to", -1, "the journal partition to move it to")
	by := fs.String("by", "", "who asks for the move (recorded)")
	reason := fs.String("reason", "", "why (recorded)")
	list := fs.Bool("list", false, "print the organization's placement and moves instead of moving it")
	wait := fs.Duration("wait", 5*time.Minute, "how long to wait for the nodes to carry the move out (it goes on after)")
	fs.Usage = func() {
		fmt.Fprint(stderr, moveUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := env.err; err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 0:
		fs.Usage()
		return fmt.Errorf("move: unexpected argument %q", fs.Arg(0))
	case strings.TrimSpace(*brokers) == "":
		return fmt.Errorf("move: --kafka-brokers is required")
	case *org == "":
		return fmt.Errorf("move: --org is required")
	case *parts <= 0:
		return fmt.Errorf("move: --journal-partitions must be positive, not %d", *parts)
	case !*list && (*to < 0 || *to >= *parts):
		return fmt.Errorf("move: --to must be a partition from 0 to %d, not %d", *parts-1, *to)
	case !*list && strings.TrimSpace(*by) == "":
		return fmt.Errorf("move: --by is required (who asks for the move is recorded)")
	case !*list && strings.TrimSpace(*reason) == "":
		return fmt.Errorf("move: --reason is required (why is recorded)")
	}
	host, _ := os.Hostname()
	dir := streams.NewDirectory(streams.DirectoryConfig{Brokers: strings.Split(*brokers, ","), Partitions: *parts, Node: "cli-" + host})
	if err := dir.Open(); err != nil {
		return fmt.Errorf("move: open the placement directory: %w", err)
	}
	defer func() { _ = dir.Close(context.Background()) }()
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if *list {
		p, ok := dir.Lookup(*org)
		if !ok {
			return fmt.Errorf("move: organization %s is not placed", *org)
		}
		moves := dir.Moves(*org)
		if moves == nil {
			moves = []streams.Move{}
		}
		return enc.Encode(map[string]any{"placement": p, "moves": moves})
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	m, err := dir.Move(ctx, *org, int32(*to), *by, *reason)
	if err != nil {
		if m.ID != "" {
			_ = enc.Encode(m)
		}
		return fmt.Errorf("move: %w", err)
	}
	return enc.Encode(m)
}

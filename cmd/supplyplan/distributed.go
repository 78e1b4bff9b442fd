package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/actors"
	"github.com/supplyplan/supplyplan/streams"
)

// cluster is the distributed mode's part of Main (docs/distributed.md): the placement directory,
// the journal on Kafka, the owner table and the membership in the nodes' group.
type cluster struct {
	dir      *streams.Directory
	journal  *streams.KafkaJournal
	table    *streams.OwnerTable
	members  *streams.Membership
	own      *streams.Ownership
	mover    *streams.Mover
	placed   *streams.PlacedSignals // demand signals by partition (nil without a signal consumer)
	stopBoot func()
}

// checkMode validates --mode and what the distributed mode needs.
func (c Config) checkMode() error {
	switch c.Mode {
	case "embedded", "":
		return nil
	case "distributed":
		if strings.TrimSpace(c.KafkaBrokers) == "" {
			return errors.New("--mode distributed requires --kafka-brokers (SUPPLYPLAN_KAFKA_BROKERS): the journal lives on Kafka")
		}
		if c.JournalPartitions <= 0 {
			return fmt.Errorf("--journal-partitions must be positive, not %d", c.JournalPartitions)
		}
		if c.NodeSessionTimeout <= 0 {
			return fmt.Errorf("--node-session-timeout must be positive, not %s", c.NodeSessionTimeout)
		}
		if c.NodeID == "" {
			return errors.New("--node-id is required in distributed mode (the host has no name)")
		}
		if strings.TrimSpace(c.ClickHouseAddr) == "" {
			// The embedded demand store is in one node's data dir: an organization's next owner
			// (failover, move) would not see its demand history nor the signals applied there.
			return errors.New("--mode distributed requires --clickhouse-addr (SUPPLYPLAN_CLICKHOUSE_ADDR): the nodes share demand history through ClickHouse")
		}
		return nil
	}
	return fmt.Errorf("--mode must be embedded or distributed, not %q", c.Mode)
}

// openCluster opens the directory, the Kafka journal and the owner table, and builds the
// membership (joinCluster joins the group once the services are open).
func (m *Main) openCluster() error {
	cfg := m.Config
	brokers := strings.Split(cfg.KafkaBrokers, ",")
	addr := cfg.AdvertiseAddr
	if addr == "" {
		addr = cfg.APIAddr
	}
	c := &cluster{}
	m.cluster = c
	c.dir = streams.NewDirectory(streams.DirectoryConfig{Brokers: brokers, Partitions: cfg.JournalPartitions, Node: cfg.NodeID, Logger: m.Log})
	if err := c.dir.Open(); err != nil {
		return fmt.Errorf("open placement directory: %w", err)
	}
	c.journal = streams.NewKafkaJournal(streams.KafkaJournalConfig{Brokers: brokers, Topic: cfg.JournalTopic,
		Partitions: cfg.JournalPartitions, Node: cfg.NodeID, Addr: addr, Locate: c.dir.Locate, Logger: m.Log})
	if err := c.journal.Open(); err != nil {
		return fmt.Errorf("open kafka journal: %w", err)
	}
	table, err := streams.OpenOwnerTable(brokers, "", m.Log)
	if err != nil {
		return err
	}
	c.table = table
	c.own = &streams.Ownership{Directory: c.dir, Table: table, Addr: addr}
	c.members = streams.NewMembership(streams.MembershipConfig{Brokers: brokers, Group: cfg.NodeGroup, Journal: c.journal, Logger: m.Log,
		Directory:      c.dir,
		SessionTimeout: cfg.NodeSessionTimeout, HeartbeatInterval: cfg.NodeSessionTimeout / 10,
		Restore: func(ctx context.Context, p int32) error {
			return m.System.Core.Restore(ctx, func(s string) bool { return c.own.Restores(s, p) })
		},
		Resumed: func(ctx context.Context, p int32) {
			m.System.Core.Resume(ctx, func(s string) bool { return c.own.InPartition(s, p) })
			if c.placed != nil {
				c.placed.Run(ctx, p) // until the partition is revoked (the revocation waits for it)
			}
		},
		Stop: func(ctx context.Context, p int32, _ bool) {
			m.System.Core.Stop(ctx, func(s string) bool { return c.own.InPartition(s, p) })
		}})
	c.own.Membership = c.members
	// Moves of organizations between partitions (Directory.Move) are carried out by the owners
	// of the partitions: this node's part.
	c.mover = &streams.Mover{Directory: c.dir, Journal: c.journal, Membership: c.members, Node: cfg.NodeID, Logger: m.Log,
		StopOrg: func(ctx context.Context, org string) {
			m.System.Core.Stop(ctx, func(s string) bool { return streams.PlacementKey(s) == org })
		},
		Resumed: func(ctx context.Context, org string) {
			m.System.Core.Resume(ctx, func(s string) bool { return streams.PlacementKey(s) == org })
		}}
	m.Owners, m.NodeID = c.own, cfg.NodeID
	return nil
}

// openPlacedSignals returns the demand-signal consumer's sink in distributed mode: signals go to
// their organization's partition of the placed topic, read by that partition's owner
// (streams.PlacedSignals, docs/distributed.md).
func (m *Main) openPlacedSignals() (supplyplan.SignalSink, error) {
	c := m.cluster
	p := streams.NewPlacedSignals(streams.PlacedSignalsConfig{Brokers: strings.Split(m.Config.KafkaBrokers, ","),
		Topic: m.Config.KafkaTopic + ".placed", Group: m.Config.KafkaGroup + "-placed", Partitions: m.Config.JournalPartitions,
		Locate: c.dir.Partition, Logger: m.Log,
		Known: func(org string) bool { _, ok := m.System.Platform.Organization(org); return ok }}, m.System.Signals)
	if err := p.Open(); err != nil {
		return nil, fmt.Errorf("open placed signals: %w", err)
	}
	c.placed = p
	return p, nil
}

// joinCluster joins the nodes' group (once the services are open): partitions arrive, are
// acquired and restored; the mover starts.
func (m *Main) joinCluster() error {
	if err := m.cluster.members.Open(); err != nil {
		return err
	}
	m.cluster.mover.Start()
	return nil
}

// bootstrapCluster creates the demo organization and merchant on whichever node owns the
// platform stream: every node tries every second until it succeeds (the gate answers a node
// that does not own it at once, without a network call); on a node that owns it, it succeeds
// (a no-op when the organization exists).
func (m *Main) bootstrapCluster(credsPath string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	m.cluster.stopBoot = func() { cancel(); <-done }
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			err := m.bootstrap(ctx, credsPath)
			var no *supplyplan.ErrNotOwner
			switch {
			case err == nil:
				return
			case !errors.Is(err, supplyplan.ErrRestoring) && !errors.As(err, &no) && ctx.Err() == nil:
				m.Log.Warn("bootstrap of the demo organization failed; trying again", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// closeMembership leaves the group: every owned partition is drained and released.
func (m *Main) closeMembership(ctx context.Context, step func(string, func() error)) {
	c := m.cluster
	if c.stopBoot != nil {
		c.stopBoot()
	}
	if c.mover != nil {
		c.mover.Close()
	}
	if c.members != nil {
		step("membership", func() error { return c.members.Close(ctx) })
	}
}

// closeCluster closes the journal, the owner table and the directory (after the core).
func (m *Main) closeCluster(ctx context.Context, step func(string, func() error)) {
	c := m.cluster
	if c.placed != nil {
		c.placed.Close()
	}
	if c.journal != nil {
		step("kafka journal", func() error { return c.journal.Close(ctx) })
	}
	if c.table != nil {
		c.table.Close()
	}
	if c.dir != nil {
		step("placement directory", func() error { return c.dir.Close(ctx) })
	}
}

// gateFunc is the core's ownership gate in distributed mode (nil in embedded mode).
func (m *Main) gateFunc() func(string) error {
	if m.cluster == nil {
		return nil
	}
	return m.cluster.own.Serve
}

// followPlatformFunc follows the platform stream on the Kafka journal (nil in embedded mode).
func (m *Main) followPlatformFunc() func(context.Context, func(uint64, []byte) error, func(uint64, []byte) error, func()) error {
	if m.cluster == nil {
		return nil
	}
	j := m.cluster.journal
	return func(ctx context.Context, onSnap func(uint64, []byte) error, onEntry func(uint64, []byte) error, caughtUp func()) error {
		return j.Follow(ctx, actors.PlatformStream, onSnap, onEntry, caughtUp)
	}
}

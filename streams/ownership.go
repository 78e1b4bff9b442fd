package streams

import (
	"context"
	"fmt"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Ownership answers, on one node, who serves an organization (supplyplan.Owners) and whether a
// journaled actor may run here (Serve, the core's gate): the directory places the organization on
// a partition, the membership says whether this node owns it and has restored it, and the owner
// table says which node owns it otherwise, at which address.
type Ownership struct {
	Directory  *Directory
	Membership *Membership
	Table      *OwnerTable
	// Addr is this node's advertised REST address.
	Addr string
}

var _ supplyplan.Owners = (*Ownership)(nil)

// Owner implements supplyplan.Owners. An organization that is moving is reported restoring on
// every node (its requests are answered 503 with Retry-After: 1 until the move is done).
func (o *Ownership) Owner(org string) (addr string, local bool, restoring bool, err error) {
	p, moving, err := o.partition(org)
	if err != nil {
		return "", false, false, err
	}
	if owned, active := o.Membership.State(p); owned {
		return o.Addr, true, !active || moving, nil
	}
	return o.remote(p), false, moving, nil
}

// Serve returns nil when this node owns the stream's partition and restored it,
// supplyplan.ErrRestoring while it restores it or while the stream's organization moves, else a
// *supplyplan.ErrNotOwner naming the owner.
func (o *Ownership) Serve(stream string) error {
	key := PlacementKey(stream)
	p, moving, err := o.partition(key)
	if err != nil {
		return err
	}
	switch owned, active := o.Membership.State(p); {
	case owned && active && moving:
		return fmt.Errorf("organization %s is moving to another partition: %w", key, supplyplan.ErrRestoring)
	case owned && active:
		return nil
	case owned:
		return supplyplan.ErrRestoring
	}
	return &supplyplan.ErrNotOwner{Org: key, Owner: o.remote(p)}
}

// Restores reports whether a restore of partition p starts stream's actor: placed on p, and its
// organization not moving (a move in progress drains it on p; it is served on its new partition
// once the move is done).
func (o *Ownership) Restores(stream string, p int32) bool {
	q, moving, err := o.partition(PlacementKey(stream))
	return err == nil && q == p && !moving
}

// InPartition reports whether stream is placed on partition p.
func (o *Ownership) InPartition(stream string, p int32) bool {
	q, _, err := o.partition(PlacementKey(stream))
	return err == nil && q == p
}

// partition is the key's partition (placing a new organization), and whether it is moving.
func (o *Ownership) partition(key string) (int32, bool, error) {
	if pl, moving, ok := o.Directory.lookupMoving(key); ok {
		return pl.Partition, moving, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := o.Directory.Partition(ctx, key)
	return p, false, err
}

// remote is the address of partition p's owner as the owner table knows it ("" unknown, or this
// node's own stale record).
func (o *Ownership) remote(p int32) string {
	if rec, ok := o.Table.Owner(p); ok && rec.Addr != o.Addr {
		return rec.Addr
	}
	return ""
}

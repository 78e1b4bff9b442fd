package streams

import (
	"context"
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

// Owner implements supplyplan.Owners.
func (o *Ownership) Owner(org string) (addr string, local bool, restoring bool, err error) {
	p, err := o.partition(org)
	if err != nil {
		return "", false, false, err
	}
	if owned, active := o.Membership.State(p); owned {
		return o.Addr, true, !active, nil
	}
	return o.remote(p), false, false, nil
}

// Serve returns nil when this node owns the stream's partition and restored it,
// supplyplan.ErrRestoring while it restores it, else a *supplyplan.ErrNotOwner naming the owner.
func (o *Ownership) Serve(stream string) error {
	key := PlacementKey(stream)
	p, err := o.partition(key)
	if err != nil {
		return err
	}
	switch owned, active := o.Membership.State(p); {
	case owned && active:
		return nil
	case owned:
		return supplyplan.ErrRestoring
	}
	return &supplyplan.ErrNotOwner{Org: key, Owner: o.remote(p)}
}

// InPartition reports whether stream is placed on partition p.
func (o *Ownership) InPartition(stream string, p int32) bool {
	q, err := o.partition(PlacementKey(stream))
	return err == nil && q == p
}

func (o *Ownership) partition(key string) (int32, error) {
	if pl, ok := o.Directory.Lookup(key); ok {
		return pl.Partition, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return o.Directory.Partition(ctx, key)
}

// remote is the address of partition p's owner as the owner table knows it ("" unknown, or this
// node's own stale record).
func (o *Ownership) remote(p int32) string {
	if rec, ok := o.Table.Owner(p); ok && rec.Addr != o.Addr {
		return rec.Addr
	}
	return ""
}

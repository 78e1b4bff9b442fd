package redisstore_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/testdeps"
	"github.com/supplyplan/supplyplan/redisstore"
)

func TestGatewayKeys(t *testing.T) {
	ctx := context.Background()
	s := redisstore.New(redisstore.Config{Addr: testdeps.Redis(t), Prefix: "sptest:" + supplyplan.NewID("t") + ":"})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(ctx) })
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	name := "agent"
	k, secret, err := s.CreateGatewayKey(ctx, supplyplan.KeyNameInput{Name: &name})
	if err != nil || secret == "" || k.Name != "agent" || k.Hash == "" {
		t.Fatalf("create = %+v %q %v", k, secret, err)
	}
	got, ok, err := s.AuthenticateGateway(ctx, secret)
	if err != nil || !ok || got.ID != k.ID {
		t.Fatalf("authenticate = %+v %v %v", got, ok, err)
	}
	if _, ok, err := s.AuthenticateGateway(ctx, "nope"); err != nil || ok {
		t.Fatalf("unknown key = %v %v", ok, err)
	}
	k2, _, _ := s.CreateGatewayKey(ctx, supplyplan.KeyNameInput{})
	list, err := s.ListGatewayKeys(ctx)
	if err != nil || len(list) != 2 || list[0].ID != k.ID || list[1].ID != k2.ID {
		t.Fatalf("list = %+v %v", list, err)
	}
	if err := s.RevokeGatewayKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.AuthenticateGateway(ctx, secret); ok {
		t.Fatal("a revoked key still authenticates")
	}
	if err := s.RevokeGatewayKey(ctx, "key_nope"); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("revoke unknown = %v", err)
	}
	list, _ = s.ListGatewayKeys(ctx)
	if list[0].RevokedAt == nil {
		t.Fatal("revocation not listed")
	}
}

func TestRedisDown(t *testing.T) {
	ctx := context.Background()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	s := redisstore.New(redisstore.Config{Addr: addr, Timeout: 200 * time.Millisecond})
	_ = s.Open(ctx)
	defer s.Close(ctx)
	if err := s.Ping(ctx); err == nil {
		t.Fatal("ping succeeded")
	}
	if _, _, err := s.AuthenticateGateway(ctx, "x"); supplyplan.ErrorCode(err) != supplyplan.EUNAVAILABLE {
		t.Fatalf("err = %v", err)
	}
}

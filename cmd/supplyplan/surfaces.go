package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/supplyplan/supplyplan"
	sphttp "github.com/supplyplan/supplyplan/http"
	"github.com/supplyplan/supplyplan/internal/fsutil"
	"github.com/supplyplan/supplyplan/redisstore"
	"github.com/supplyplan/supplyplan/rpc"
	"github.com/supplyplan/supplyplan/tools"
)

// mcpParts are what the MCP surfaces share, prepared before the servers start.
type mcpParts struct {
	gateway supplyplan.GatewayKeyStore
	health  map[string]func(context.Context) error
	deps    *tools.Deps
	origins []string
}

// openMCPStores opens Redis (distributed mode), picks the gateway key store, ensures the demo
// gateway key and prepares the tool backends.
func (m *Main) openMCPStores(ctx context.Context, credsPath string) error {
	cfg := m.Config
	m.mcp = mcpParts{gateway: m.System.MCP, health: map[string]func(context.Context) error{}}
	if cfg.RedisAddr != "" {
		m.Redis = redisstore.New(redisstore.Config{Addr: cfg.RedisAddr, Password: cfg.RedisPassword, Prefix: cfg.RedisPrefix, Logger: m.Log})
		if err := m.Redis.Open(ctx); err != nil {
			return err
		}
		if err := m.Redis.Ping(ctx); err != nil {
			m.Log.Warn("redis is unreachable; gateway keys answer 503 until it is back", "addr", cfg.RedisAddr, "err", err)
		}
		m.mcp.gateway = m.Redis
		m.mcp.health["redis"] = m.Redis.Ping
	}
	if err := ensureDemoGatewayKey(ctx, m.mcp.gateway, credsPath); err != nil {
		m.Log.Warn("cannot create the demo gateway key", "err", err)
	}
	var atp tools.ATPBackend
	if m.Catalog == nil { // the system's catalog: check_availability's dated figures from its ledger
		m.Catalog, atp = m.System.Catalog, m.System.Allocation
	}
	secret, err := toolsSecret(cfg)
	if err != nil {
		return err
	}
	m.mcp.deps = &tools.Deps{Catalog: m.Catalog, ATP: atp, Audit: m.System.MCP, Confirm: &tools.Confirmer{Secret: secret}}
	switch {
	case m.Planning != nil:
		m.mcp.deps.Forecasts, m.mcp.deps.Transfers = m.Planning, m.Planning
	default:
		m.mcp.deps.Transfers = tools.TransferTools{Service: m.System.Transfers}
		if m.Forecaster == nil {
			m.Forecaster = m.System.Forecasts
		}
		if m.Forecaster != nil && m.Catalog != nil {
			m.mcp.deps.Forecasts = tools.ForecastTools{Forecaster: m.Forecaster, Catalog: m.Catalog}
		}
	}
	for _, o := range strings.Split(cfg.MCPAllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			m.mcp.origins = append(m.mcp.origins, o)
		}
	}
	return nil
}

// openSurfaces starts the tool service, the registry and the loop catalog (those the
// configuration selects).
func (m *Main) openSurfaces() error {
	cfg := m.Config
	run := cfg.Surfaces.all()
	if run.Tools {
		mcp := rpc.NewHandler(rpc.Config{Name: "supplyplan-tools", Title: "Supplyplan merchant tools", Version: Version,
			Instructions: "Commerce and planning tools of one merchant (the org query parameter). " +
				"State-changing tools answer with a confirmation token first; call again with it to act.",
			AllowedOrigins: m.mcp.origins, PageSize: cfg.MCPPageSize, MaxBody: cfg.BodyLimit, Logger: m.Log})
		m.Tools = sphttp.NewToolServer(sphttp.ToolsConfig{Addr: cfg.ToolsAddr, BodyLimit: cfg.BodyLimit,
			RequestTimeout: cfg.RequestTimeout, Logger: m.Log, BodyBudget: m.bodies, Owners: m.Owners, NodeID: m.NodeID},
			sphttp.ToolsServices{Keys: m.System.MCP, Merchants: m.System.MCP, Deps: m.mcp.deps, MCP: mcp, Health: m.mcp.health})
		if err := m.Tools.Open(); err != nil {
			return err
		}
		fmt.Fprintf(m.out, "listening tools http://%s\n", m.Tools.Addr())
	}
	if run.Registry {
		m.Registry = rpc.NewRegistryServer(rpc.RegistryConfig{Addr: cfg.RegistryAddr, RequestTimeout: cfg.RequestTimeout, Logger: m.Log,
			MCP: rpc.Config{Name: "supplyplan-registry", Title: "Supplyplan merchant registry", Version: Version,
				Instructions: "Find merchants with search_merchants, inspect one with get_merchant, list its tools with " +
					"list_merchant_tools, then connect to its mcpUrl on the tool service.",
				AllowedOrigins: m.mcp.origins, PageSize: cfg.MCPPageSize, MaxBody: cfg.BodyLimit}},
			m.mcp.gateway, rpc.Directory{Merchants: m.System.MCP, ToolDeps: m.mcp.deps, ToolsURL: m.toolsURL}, m.mcp.health)
		if err := m.Registry.Open(); err != nil {
			return err
		}
		fmt.Fprintf(m.out, "listening registry http://%s\n", m.Registry.Addr())
	}
	if run.LoopCatalog {
		if err := m.openLoopCatalog(); err != nil {
			return err
		}
	}
	if run.LoopRuntime {
		if err := m.openLoopRuntime(); err != nil {
			return err
		}
	}
	return nil
}

// toolsURL is the tool service's public base URL the registry hands out.
func (m *Main) toolsURL() string {
	if m.Config.ToolsPublicURL != "" {
		return strings.TrimRight(m.Config.ToolsPublicURL, "/")
	}
	if m.Tools != nil {
		return "http://" + m.Tools.Addr()
	}
	return "http://" + m.Config.ToolsAddr
}

// toolsSecret returns the confirmation token secret: the configured one, or one generated once
// into the data dir.
func toolsSecret(cfg Config) ([]byte, error) {
	if cfg.ToolsSecret != "" {
		return []byte(cfg.ToolsSecret), nil
	}
	path := filepath.Join(cfg.DataDir, "tools-secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return []byte(strings.TrimSpace(string(b))), nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read tools secret: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	secret := hex.EncodeToString(raw)
	if err := fsutil.WriteFileBytes(path, []byte(secret+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write tools secret: %w", err)
	}
	return []byte(secret), nil
}

// ensureDemoGatewayKey creates the demo gateway key (name "demo") when the store has none or the
// credentials file lost its secret, and records it as keys.gateway in credentials.json.
func ensureDemoGatewayKey(ctx context.Context, store supplyplan.GatewayKeyStore, credsPath string) error {
	creds, err := readCredentials(credsPath)
	if err != nil {
		return err
	}
	if creds.Keys[supplyplan.CredGateway] != "" {
		if _, ok, err := store.AuthenticateGateway(ctx, creds.Keys[supplyplan.CredGateway]); err != nil || ok {
			return err
		}
	}
	name := "demo"
	_, secret, err := store.CreateGatewayKey(ctx, supplyplan.KeyNameInput{Name: &name})
	if err != nil {
		return err
	}
	return mergeCredentials(credsPath, map[string]string{supplyplan.CredGateway: secret})
}

func readCredentials(path string) (supplyplan.Credentials, error) {
	var c supplyplan.Credentials
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		c.Keys = map[string]string{}
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read credentials: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("decode credentials: %w", err)
	}
	if c.Keys == nil {
		c.Keys = map[string]string{}
	}
	return c, nil
}

// mergeCredentials adds keys to credentials.json, keeping everything else.
func mergeCredentials(path string, keys map[string]string) error {
	c, err := readCredentials(path)
	if err != nil {
		return err
	}
	for k, v := range keys {
		c.Keys[k] = v
	}
	return writeCredentials(path, c)
}

package main

import (
	"fmt"

	sphttp "github.com/supplyplan/supplyplan/http"
)

// openConsole starts the operator console (serve, unless --console-addr is empty) over the same
// services as the REST API.
func (m *Main) openConsole(credsPath string) error {
	cfg := m.Config
	if !cfg.Surfaces.all().Console || cfg.ConsoleAddr == "" {
		return nil
	}
	ccfg := sphttp.ConsoleConfig{Addr: cfg.ConsoleAddr, SessionTTL: cfg.ConsoleSessionTTL,
		SessionIdle: cfg.ConsoleSessionIdle, BodyLimit: cfg.BodyLimit, ImportMaxBytes: cfg.ImportMaxBytes, ImportMaxRows: cfg.ImportMaxRows,
		RequestTimeout: cfg.RequestTimeout, SecureCookie: cfg.ConsoleSecure, Logger: m.Log, BodyBudget: m.bodies, Now: cfg.Clock,
		Owners: m.Owners, NodeID: m.NodeID}
	if m.Redis != nil { // sessions shared by every node (--redis-addr); else in this process
		ccfg.Sessions = m.Redis
	}
	c, err := sphttp.NewConsoleServer(ccfg,
		sphttp.Services{Auth: m.System.Platform, Platform: m.System.Platform, Forecasting: m.System.Forecasting,
			Catalog: m.System.Catalog, Imports: m.System.Imports, Demand: m.System.Catalog, Transfers: m.System.Transfers,
			Forecast: m.System.Forecasts, Alerts: m.System.Alerts, Webhooks: m.System.Webhooks, Billing: m.System.Billing,
			Allocation: m.System.Allocation, Loops: m.System.Loops, LoopRuntime: m.System.LoopRuntime})
	if err != nil {
		return err
	}
	if err := c.Open(); err != nil {
		return err
	}
	m.Console = c
	fmt.Fprintf(m.out, "listening console http://%s/ (sign in with a key of %s)\n", c.Addr(), credsPath)
	return nil
}

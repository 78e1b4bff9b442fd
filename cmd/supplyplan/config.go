package main

import (
	"flag"
	"os"
	"strconv"
	"time"
)

// Config is every setting of `supplyplan serve`. Each flag falls back to an environment variable.
type Config struct {
	DataDir         string
	APIAddr         string
	LogLevel        string
	RequestTimeout  time.Duration
	ShutdownTimeout time.Duration
	BodyLimit       int
	SnapshotEvery   int
	DebugAddr       string
}

// DefaultConfig returns the embedded defaults, overridden by the environment.
func DefaultConfig() Config {
	return Config{
		DataDir:         envString("SUPPLYPLAN_DATA_DIR", "./data"),
		APIAddr:         envString("SUPPLYPLAN_API_ADDR", "127.0.0.1:8080"),
		LogLevel:        envString("SUPPLYPLAN_LOG_LEVEL", "info"),
		RequestTimeout:  envDuration("SUPPLYPLAN_REQUEST_TIMEOUT", 30*time.Second),
		ShutdownTimeout: envDuration("SUPPLYPLAN_SHUTDOWN_TIMEOUT", 30*time.Second),
		BodyLimit:       envInt("SUPPLYPLAN_BODY_LIMIT", 1<<20),
		SnapshotEvery:   envInt("SUPPLYPLAN_SNAPSHOT_EVERY", 10000),
		DebugAddr:       envString("SUPPLYPLAN_DEBUG_ADDR", ""),
	}
}

// Bind declares the flags; their defaults are the values already in c.
func (c *Config) Bind(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data", c.DataDir, "data directory: journal, snapshots, credentials.json (SUPPLYPLAN_DATA_DIR)")
	fs.StringVar(&c.APIAddr, "api-addr", c.APIAddr, "REST API listen address (SUPPLYPLAN_API_ADDR)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (SUPPLYPLAN_LOG_LEVEL)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "deadline of each API request (SUPPLYPLAN_REQUEST_TIMEOUT)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long SIGTERM waits for in-flight work (SUPPLYPLAN_SHUTDOWN_TIMEOUT)")
	fs.IntVar(&c.BodyLimit, "body-limit", c.BodyLimit, "largest JSON body of the forecasting, transfers, alerts and platform endpoints, bytes (SUPPLYPLAN_BODY_LIMIT)")
	fs.StringVar(&c.DebugAddr, "debug-addr", c.DebugAddr, "serve Go pprof at http://<addr>/debug/pprof/ (off when empty) (SUPPLYPLAN_DEBUG_ADDR)")
	fs.IntVar(&c.SnapshotEvery, "snapshot-every", c.SnapshotEvery, "journal entries between snapshots of a tenant (SUPPLYPLAN_SNAPSHOT_EVERY)")
}

func envString(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

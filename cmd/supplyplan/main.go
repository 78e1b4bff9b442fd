// Command supplyplan is the supply planning service: one binary whose `serve` subcommand runs
// every surface in one process. It is the only package that imports every adapter.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "supplyplan:", err)
		}
		var ex exitError
		if errors.As(err, &ex) {
			os.Exit(ex.code)
		}
		os.Exit(2)
	}
}

const usage = `supplyplan: supply planning service

Usage:
  supplyplan serve [flags]     run every surface in one process (see: supplyplan serve --help)
  supplyplan registry [flags]  run only the MCP registry discovery endpoint
  supplyplan tools [flags]     run only the hosted commerce tool service
  supplyplan loop-catalog [flags]  run only the loop catalog
  supplyplan loop-runtime [flags]  run only the loop runtime
  supplyplan loop verify [flags] <manifest.json>
                               check a downloaded loop manifest's digest, integrity and signature
  supplyplan token --org <org> --scope <scopes>  print a loop runtime JWT from the local issuer
  supplyplan move --org <org> --to <partition> --by <who> --reason <why>
                               distributed mode: move an organization with its state (--list: its moves)
  supplyplan version           print the version
`

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "dev"

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "serve":
		return serve(args[0], args[1:], Surfaces{}, stdout, stderr)
	case "registry":
		return serve(args[0], args[1:], Surfaces{Registry: true}, stdout, stderr)
	case "tools":
		return serve(args[0], args[1:], Surfaces{Tools: true}, stdout, stderr)
	case "loop-catalog":
		return serve(args[0], args[1:], Surfaces{LoopCatalog: true}, stdout, stderr)
	case "loop-runtime":
		return serve(args[0], args[1:], Surfaces{LoopRuntime: true}, stdout, stderr)
	case "loop":
		return loopCommand(args[1:], stdout, stderr)
	case "token":
		return tokenCommand(args[1:], stdout, stderr)
	case "move":
		return moveCommand(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func serve(name string, args []string, surfaces Surfaces, stdout, stderr io.Writer) error {
	cfg := DefaultConfig()
	if err := cfg.EnvError(); err != nil {
		return err
	}
	cfg.Surfaces = surfaces
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	logOut := newLineBuffer(stderr, 100*time.Millisecond)
	defer logOut.Close()
	logger, err := newLogger(logOut, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	slog.SetDefault(logger) // hollywood logs through the default logger
	defer gcHeadroom(cfg.GCHeadroomPct)()
	restoreProcs, err := extraProcs(cfg.ExtraProcs)
	if err != nil {
		return err
	}
	defer restoreProcs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	m := NewMain(cfg, logger, stdout)
	m.LogOutput = logOut
	if err := m.Open(ctx); err != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(closeCtx)
		return err
	}
	<-ctx.Done()
	logger.Info("shutting down")
	closeCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	return m.Close(closeCtx)
}

// parseLevel reads --log-level.
func parseLevel(level string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return l, fmt.Errorf("--log-level: %w", err)
	}
	return l, nil
}

// newLogger returns the process's logger: text or JSON lines on w at level.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	l, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/supplyplan/supplyplan/jwtauth"
)

// `supplyplan token`: a JWT for the loop runtime from the local issuer (docs/loop-runtime-auth.md).

const tokenUsage = `Usage:
  supplyplan token --data <dir> --org <organization> --scope <scopes> [--ttl 15m]
      print a JWT for the loop runtime signed by the local issuer: the Ed25519 key
      <dir>/loop-issuer.jwk, created on first use. A runtime started on the same data dir without
      --loop-jwt-issuer accepts it.
`

func tokenCommand(args []string, stdout, stderr io.Writer) error {
	var env envReader
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", env.str("SUPPLYPLAN_DATA_DIR", "./data"), "data directory holding the local issuer key (SUPPLYPLAN_DATA_DIR)")
	org := fs.String("org", "", "the organization the token acts for: its id or slug (the `org` claim)")
	var scopes []string
	fs.Func("scope", "scopes, space- or comma-separated or repeated: "+jwtauth.ScopeRead+", "+jwtauth.ScopeWrite+", "+jwtauth.ScopeAdmin, func(s string) error {
		scopes = append(scopes, strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })...)
		return nil
	})
	ttl := fs.Duration("ttl", jwtauth.DefaultMaxLifetime, "lifetime of the token, at most 15m")
	fs.Usage = func() {
		fmt.Fprint(stderr, tokenUsage+"\nFlags:\n")
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
		return fmt.Errorf("token: unexpected argument %q", fs.Arg(0))
	case *org == "":
		fs.Usage()
		return fmt.Errorf("token: --org is required")
	case len(scopes) == 0:
		fs.Usage()
		return fmt.Errorf("token: --scope is required")
	}
	tok, err := jwtauth.MintLocal(*data, *org, scopes, *ttl)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

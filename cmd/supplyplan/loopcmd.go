package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan"
)

// `supplyplan loop ...`: client commands of the loop catalog.

// exitError is an error with the exit status it calls for (main exits 2 on other errors).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

const loopUsage = `Usage:
  supplyplan loop verify [flags] <manifest.json>
      check a loop manifest (as downloaded from GET /v1/blobs/{digest}) against its version's
      digest, integrity and the catalog's signature; exit status 0 when it verifies, 1 when it
      does not, 2 when it could not be checked (see: supplyplan loop verify --help)
`

func loopCommand(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, loopUsage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "verify":
		return loopVerify(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, loopUsage)
		return nil
	}
	fmt.Fprint(stderr, loopUsage)
	return fmt.Errorf("unknown loop command %q", args[0])
}

// loopVerify is `supplyplan loop verify`: the version's dist (digest, integrity, signatures) comes
// from the catalog or a file, the catalog's keys from its JWKS URL or a file, and
// supplyplan.VerifyLoopManifest checks the manifest against both.
func loopVerify(args []string, stdout, stderr io.Writer) error {
	var env envReader
	fs := flag.NewFlagSet("loop verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	catalog := fs.String("catalog", env.str("SUPPLYPLAN_LOOP_CATALOG_URL", "http://127.0.0.1:3011"),
		"base URL of the loop catalog (SUPPLYPLAN_LOOP_CATALOG_URL)")
	key := fs.String("key", env.str("SUPPLYPLAN_LOOP_CATALOG_KEY", ""),
		"API key that reads the version from the catalog: an organization's key (any role) or the platform key (SUPPLYPLAN_LOOP_CATALOG_KEY)")
	loop := fs.String("loop", "", "the version to check against, scope/name@version (default: the name and version the manifest declares)")
	distFile := fs.String("dist", "", "JSON file of the version, as GET /v1/loops/{scope}/{name}/versions/{version} returns it, instead of asking the catalog")
	keysFile := fs.String("keys", "", "JWKS file of the catalog's keys, instead of GET <catalog>/.well-known/loop-catalog/keys")
	fs.Usage = func() {
		fmt.Fprint(stderr, loopUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := env.err; err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("loop verify: want one manifest file, got %d arguments", fs.NArg())
	}
	manifest, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("loop verify: %w", err)
	}

	name, version, nameErr := loopToVerify(*loop, manifest)
	var dist supplyplan.LoopDist
	if *distFile != "" {
		if err := readJSONFile(*distFile, &dist); err != nil {
			return fmt.Errorf("loop verify: --dist: %w", err)
		}
		if *loop == "" {
			name, version, nameErr = dist.Name, dist.Version, nil // the file says which version it is
		}
		if nameErr != nil {
			return fmt.Errorf("loop verify: %w", nameErr)
		}
		if dist.Name != name || dist.Version != version {
			return fmt.Errorf("loop verify: --dist %s describes %s@%s, not %s@%s", *distFile, dist.Name, dist.Version, name, version)
		}
	} else {
		if nameErr != nil {
			return fmt.Errorf("loop verify: %w", nameErr)
		}
		scope, short, _ := strings.Cut(name, "/")
		path := "/v1/loops/" + url.PathEscape(scope) + "/" + url.PathEscape(short) + "/versions/" + url.PathEscape(version)
		if err := catalogGet(*catalog, path, *key, &dist); err != nil {
			return fmt.Errorf("loop verify: read %s@%s: %w", name, version, err)
		}
	}

	var keys supplyplan.JWKS
	if *keysFile != "" {
		if err := readJSONFile(*keysFile, &keys); err != nil {
			return fmt.Errorf("loop verify: --keys: %w", err)
		}
	} else if err := catalogGet(*catalog, "/.well-known/loop-catalog/keys", "", &keys); err != nil {
		return fmt.Errorf("loop verify: read the catalog's keys: %w", err)
	}

	res, err := supplyplan.VerifyLoopManifest(manifest, dist, keys)
	if err != nil {
		return exitError{code: 1, err: fmt.Errorf("%s does NOT verify as %s@%s:\n%s", fs.Arg(0), name, version, failedChecks(err))}
	}
	fmt.Fprintf(stdout, "verified %s@%s\n  digest     %s\n  integrity  %s\n  signature  Ed25519, key %s\n",
		res.Name, res.Version, res.Digest, res.Integrity, res.KeyID)
	if !res.Canonical {
		fmt.Fprintln(stdout, "  note       the file is not in canonical form (RFC 8785); its canonical form verified")
	}
	return nil
}

// loopToVerify is the version named by --loop (scope/name@version), or the one the manifest declares.
func loopToVerify(flagValue string, manifest []byte) (name, version string, err error) {
	if flagValue != "" {
		name, version, ok := strings.Cut(flagValue, "@")
		if !ok || name == "" || version == "" {
			return "", "", fmt.Errorf("--loop %q: want scope/name@version", flagValue)
		}
		if _, _, err := supplyplan.ParseLoopName(name); err != nil {
			return "", "", fmt.Errorf("--loop %q: %v", flagValue, err)
		}
		return name, version, nil
	}
	var head struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(manifest, &head); err != nil || head.Name == "" || head.Version == "" {
		return "", "", errors.New("the manifest does not say its name and version: pass --loop scope/name@version")
	}
	if _, _, err := supplyplan.ParseLoopName(head.Name); err != nil {
		return "", "", fmt.Errorf("the manifest's name %q: %v; pass --loop scope/name@version", head.Name, err)
	}
	return head.Name, head.Version, nil
}

// failedChecks lists a verification error's failed checks, one per line.
func failedChecks(err error) string {
	var e *supplyplan.Error
	if !errors.As(err, &e) || len(e.Details) == 0 {
		return "  " + err.Error()
	}
	var lines []string
	for field, msgs := range e.Details {
		for _, m := range msgs {
			lines = append(lines, "  "+field+": "+m)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

var catalogClient = &http.Client{Timeout: 30 * time.Second}

// catalogGet reads base+path into v, with the bearer key when given; an error answer is reported
// with the catalog's message.
func catalogGet(base, path, key string, v any) error {
	req, err := http.NewRequest("GET", strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := catalogClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s answered %d %s: %s", req.URL, res.StatusCode, e.Code, e.Error)
		}
		return fmt.Errorf("%s answered %d", req.URL, res.StatusCode)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", req.URL, err)
	}
	return nil
}

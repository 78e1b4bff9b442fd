package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
)

var (
	deployFlagArg = regexp.MustCompile(`(?m)^\s*-\s+--([a-z0-9-]+)`)                 // a YAML list item "- --flag=..."
	deployFlagDoc = regexp.MustCompile("`(?:supplyplan serve [^`]*)?--([a-z0-9-]+)") // a flag quoted in the README
	deployEnv     = regexp.MustCompile(`\b((?:SUPPLYPLAN|PAYMENT_PROVIDER)_[A-Z0-9_]+)\b`)
	usageEnv      = regexp.MustCompile(`\(([A-Z][A-Z0-9_]+)\)`)
)

// TestDeployNamesExist: every flag and environment setting of the binary that deploy/ (compose
// file, Kubernetes manifests, env examples, README) names exists in `supplyplan serve`.
func TestDeployNamesExist(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := DefaultConfig()
	cfg.Bind(fs)
	flags, envs := map[string]bool{}, map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		flags[f.Name] = true
		for _, m := range usageEnv.FindAllStringSubmatch(f.Usage, -1) {
			envs[m[1]] = true
		}
	})
	files, err := filepath.Glob("../../deploy/*")
	if err != nil {
		t.Fatal(err)
	}
	k8s, _ := filepath.Glob("../../deploy/k8s/*.yaml")
	files = append(files, k8s...)
	checked := map[string]bool{}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.IsDir() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		re := deployFlagArg
		if filepath.Ext(f) == ".md" {
			re = deployFlagDoc
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			checked["--"+m[1]] = true
			if !flags[m[1]] {
				t.Errorf("%s names --%s, which supplyplan serve does not have", f, m[1])
			}
		}
		for _, m := range deployEnv.FindAllStringSubmatch(string(b), -1) {
			checked[m[1]] = true
			if !envs[m[1]] {
				t.Errorf("%s names %s, which supplyplan serve does not read", f, m[1])
			}
		}
	}
	for _, must := range []string{"--kafka-brokers", "--redis-addr", "--clickhouse-addr", "--mode", "--node-id", "SUPPLYPLAN_REDIS_PASSWORD"} {
		if !checked[must] {
			t.Errorf("deploy/ never names %s: the scan missed the files", must)
		}
	}
	names := make([]string, 0, len(checked))
	for n := range checked {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("checked %d names: %v", len(names), names)
}

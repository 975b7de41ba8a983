package crleader_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestPinsAreTheLibrarys: every module the library's go.mod requires is
// built here at the library's version, not one that controller-runtime
// (or a `go get` here) raised beneath it, and controller-runtime's
// client-go is the library's minor version.
func TestPinsAreTheLibrarys(t *testing.T) {
	out, err := exec.Command("go", "mod", "edit", "-json", "../../../go.mod").Output()
	if err != nil {
		t.Fatalf("go mod edit -json ../../../go.mod: %v", err)
	}
	var lib struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &lib); err != nil {
		t.Fatal(err)
	}
	built := buildList(t)
	for _, r := range lib.Require {
		if got, ok := built[r.Path]; ok && got != r.Version {
			t.Errorf("%s is built at %s here, the library requires %s", r.Path, got, r.Version)
		}
	}
	if got, want := minor(built["k8s.io/client-go"]), minor(built["k8s.io/api"]); got == "" || got != want {
		t.Errorf("client-go %s and k8s.io/api %s are not one Kubernetes release", built["k8s.io/client-go"], built["k8s.io/api"])
	}
	if cr := built["sigs.k8s.io/controller-runtime"]; cr != "v0.25.2" {
		t.Errorf("controller-runtime is %s; moving it moves client-go: check the library's pins first, then change this test", cr)
	}
}

// buildList returns the version of every module this module builds with.
func buildList(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "all").Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	built := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			built[f[0]] = f[1]
		}
	}
	return built
}

// minor returns "v0.37" for "v0.37.2".
func minor(v string) string {
	if i := strings.LastIndex(v, "."); i > 0 {
		return v[:i]
	}
	return ""
}

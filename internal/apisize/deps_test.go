package apisize

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreLinksNoMetricsLibrary: a program that imports only campaign,
// group and the embedded backend links no Prometheus and no
// OpenTelemetry; they come with package ops, for those who ask.
func TestCoreLinksNoMetricsLibrary(t *testing.T) {
	for _, dep := range deps(t, "github.com/hustings/hustings/campaign", "github.com/hustings/hustings/group", "github.com/hustings/hustings/backends/memory") {
		if strings.Contains(dep, "prometheus") || strings.Contains(dep, "opentelemetry") {
			t.Errorf("campaign, group and backends/memory link %s", dep)
		}
	}
}

// TestDemoUsesThePublicAPI: cmd/demo imports no internal package, so
// everything it shows can be written by a user.
func TestDemoUsesThePublicAPI(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "github.com/hustings/hustings/cmd/demo").Output()
	if err != nil {
		t.Fatalf("go list cmd/demo: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "github.com/hustings/hustings/internal/") {
			t.Errorf("cmd/demo imports %s", imp)
		}
	}
}

// deps lists the packages pkgs import, directly or not (go list -deps).
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", pkgs, err)
	}
	return strings.Fields(string(out))
}

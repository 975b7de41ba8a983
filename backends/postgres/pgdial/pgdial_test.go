package pgdial_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
	_ "github.com/hustings/hustings/backends/postgres/pgdial"
	"github.com/hustings/hustings/backends/postgres/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBadPostgresURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"postgres:///db":                   "no host:port",
		"postgres://h:1/db?sslmode=bogus":  "not a PostgreSQL URL",
		"postgresql://u:secret@h:1/db?x=%": "not a PostgreSQL URL: invalid percent-encoded token",
	})
}

func TestParsePostgres(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"postgres://u:pw@h:5432/db?sslmode=disable": {Scheme: "postgres", Hosts: []string{"h:5432"}, DSN: "postgres://u:pw@h:5432/db?sslmode=disable"},
		"PostgreSQL://h:1/db":                       {Scheme: "postgres", Hosts: []string{"h:1"}, DSN: "postgresql://h:1/db"},
	})
}

func TestUsageListsPostgresOnce(t *testing.T) {
	if u := dial.Usage(); strings.Count(u, "postgres") != 1 {
		t.Fatalf("Usage() = %q, want postgres:// once and postgresql:// left out", u)
	}
}

func TestOpenPostgres(t *testing.T) {
	ps := pgtest.Start(t)
	for _, url := range []string{pgtest.DSN(ps.Addr()), strings.Replace(pgtest.DSN(ps.Addr()), "postgres://", "postgresql://", 1)} {
		t.Run(url, func(t *testing.T) { dialtest.Elect(t, url) })
	}
}

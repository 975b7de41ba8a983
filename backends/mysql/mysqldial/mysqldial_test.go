package mysqldial_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
	_ "github.com/hustings/hustings/backends/mysql/mysqldial"
	"github.com/hustings/hustings/backends/mysql/mysqltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBadMySQLURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"mysql://localhost:3306/db":      "no user",
		"mysql://u@localhost:3306":       "no database",
		"mysql://u@h:1,h:2/db":           "one host:port only",
		"mysql://u@h:1/db?timeout=bogus": "not a MySQL URL",
		"mysql:opaque":                   `no // after "mysql:"`,
		"mariadb://u:secret@h:1/db#x":    "fragments are not supported",
		"mariadb://u:secret@h:99999/db":  `port "99999"`,
	})
}

func TestParseMySQL(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"mysql://u:pw@h:3306/db?tls=false": {Scheme: "mysql", Hosts: []string{"h:3306"}, DSN: "mysql://u:pw@h:3306/db?tls=false"},
		"MariaDB://u@h:1/db":               {Scheme: "mysql", Hosts: []string{"h:1"}, DSN: "mysql://u@h:1/db"},
	})
}

// TestOpenMySQL elects a leader through a mysql:// URL on a real
// MariaDB, twice (Migrate is idempotent).
func TestOpenMySQL(t *testing.T) {
	ms := mysqltest.Start(t)
	url := "mysql://root@" + ms.Addr() + "/" + mysqltest.Database
	for _, u := range []string{url, strings.Replace(url, "mysql://", "mariadb://", 1)} {
		t.Run(u, func(t *testing.T) { dialtest.Elect(t, u) })
	}
}

package mongodial_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
	_ "github.com/hustings/hustings/backends/mongodb/mongodial"
	"github.com/hustings/hustings/backends/mongodb/mongotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBadMongoURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"mongodb://h:1/a/b":                   "one database only",
		"mongodb:opaque":                      `no // after "mongodb:"`,
		"mongodb://u:secret@h:1/db#x":         "fragments are not supported",
		"mongodb://u:secret@h:99999/db":       `port "99999"`,
		"mongodb://h:1/db?connectTimeoutMS=x": "not a MongoDB connection string",
	})
}

func TestParseMongo(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"mongodb://u:pw@h:27017/db?w=majority": {Scheme: "mongodb", Hosts: []string{"h:27017"}, DSN: "mongodb://u:pw@h:27017/db?w=majority"},
		"MongoDB://h:1,h:2":                    {Scheme: "mongodb", Hosts: []string{"h:1", "h:2"}, DSN: "mongodb://h:1,h:2"},
	})
}

// TestOpenMongo elects a leader through a mongodb:// URL on FerretDB,
// with and without a database in the path.
func TestOpenMongo(t *testing.T) {
	s := mongotest.Start(t)
	for _, u := range []string{s.URI(), "mongodb://" + s.Addr() + "/other?directConnection=true"} {
		t.Run(u, func(t *testing.T) { dialtest.Elect(t, u) })
	}
}

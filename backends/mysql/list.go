package mysql

import (
	"context"

	"github.com/hustings/hustings/backends/internal/record"
)

var _ record.Lister = (*driver)(nil)

// listSQL reads the names of the lock rows under a prefix: VARBINARY, so
// compared byte for byte.
const listSQL = `SELECT name FROM {p}locks WHERE LEFT(name, LENGTH(?)) = ?`

// ListLocks reads the names of the lock rows that start with prefix, held
// or not: one SELECT, a scan of the locks table.
func (d *driver) ListLocks(ctx context.Context, prefix string) ([]string, error) {
	var names []string
	err := retry(ctx, "list", func() error {
		names = nil
		rows, err := d.db.QueryContext(ctx, d.sql(listSQL), []byte(prefix), []byte(prefix))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name []byte
			if err := rows.Scan(&name); err != nil {
				return err
			}
			names = append(names, string(name))
		}
		return rows.Err()
	})
	return names, err
}

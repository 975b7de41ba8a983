package postgres

// IsSchemaOption reports whether o is a WithSchema, which Migrate takes.
func IsSchemaOption(o Option) bool {
	var c config
	o.apply(&c)
	return c.listen == nil
}

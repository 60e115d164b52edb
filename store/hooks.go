package store

// SetBeforeFoldCommit makes every fold transaction call fn after its
// writes and before it commits; an error from fn rolls the transaction
// back. The fault suite uses it to kill a coordinator inside a fold.
func (db *DB) SetBeforeFoldCommit(fn func() error) { db.beforeCommit.Store(&fn) }

// beforeFoldCommit runs the hook, if any.
func (db *DB) beforeFoldCommit() error {
	if fn := db.beforeCommit.Load(); fn != nil {
		return (*fn)()
	}
	return nil
}

package api

// DetailChanges is how many changes a URL's page lists, for the browser
// test to check the table against the store.
const DetailChanges = detailChanges

// Allows and Example are HostList's checks, for the guard's tests.
func (l *HostList) Allows(hostport string) bool { return l.allows(hostport) }
func (l *HostList) Example() string             { return l.example() }

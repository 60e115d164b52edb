package api

// DetailChanges is how many changes a URL's page lists, for the browser
// test to check the table against the store.
const DetailChanges = detailChanges

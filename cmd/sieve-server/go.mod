module github.com/sievedb/sieve/cmd/sieve-server

go 1.26.0

require (
	github.com/sievedb/sieve v0.0.0
	github.com/tidwall/redcon v1.6.4
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
)

replace github.com/sievedb/sieve => ../..

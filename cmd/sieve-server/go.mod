module github.com/sievedb/sieve/cmd/sieve-server

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sievedb/sieve v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/FastFilter/xorfilter v0.4.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/sievedb/sieve => ../..

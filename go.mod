module github.com/supplyplan/supplyplan

go 1.26

require (
	github.com/DataDog/gostackparse v0.7.0 // indirect
	github.com/andybalholm/brotli v1.2.0 // indirect
	github.com/anthdm/hollywood v1.0.5 // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/klauspost/cpuid/v2 v2.0.9 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasthttp v1.65.0 // indirect
	github.com/zeebo/xxh3 v1.0.2 // indirect
	google.golang.org/protobuf v1.32.0 // indirect
)

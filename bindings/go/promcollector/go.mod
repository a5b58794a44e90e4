module accel/promcollector

go 1.21

require (
	accel v0.0.0
	github.com/prometheus/client_golang v1.14.0
	github.com/prometheus/client_model v0.3.0
	github.com/prometheus/common v0.39.0
)

// The parent module, package accel.
replace accel => ../

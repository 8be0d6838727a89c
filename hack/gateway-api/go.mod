module gw.dev/hack/gateway-api

go 1.26

require sigs.k8s.io/gateway-api v1.6.3

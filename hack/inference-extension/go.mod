module gw.dev/hack/inference-extension

go 1.26

require sigs.k8s.io/gateway-api-inference-extension v1.3.0

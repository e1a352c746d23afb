#!/usr/bin/env bash
# Installs the example webhook server (examples/webhook-server) on the cluster of
# $KUBECONFIG, as a chart would: a CA and a serving certificate for
# webhook-server.webhook-server.svc made with openssl, the certificate as a TLS Secret,
# the CA as the ValidatingWebhookConfiguration's caBundle. Needs kubectl and openssl, and
# the image wasmkube.local/webhook-server:latest on the nodes (`make images` before
# `wasmkube up`). Run it again to renew the certificate.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
svc=webhook-server.webhook-server.svc
openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=webhook-server-ca" \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$svc" -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:webhook-server.webhook-server\nextendedKeyUsage=serverAuth\n' "$svc" > "$dir/ext"
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 365 \
  -extfile "$dir/ext" -out "$dir/tls.crt" 2>/dev/null
kubectl apply -f - <<NS
apiVersion: v1
kind: Namespace
metadata: {name: webhook-server}
NS
kubectl -n webhook-server create secret tls webhook-server-tls --cert "$dir/tls.crt" --key "$dir/tls.key" \
  --dry-run=client -o yaml | kubectl apply -f -
ca="$(base64 -w0 < "$dir/ca.crt")"
sed "s|CA_BUNDLE|$ca|" "$here/manifests.yaml" | kubectl apply -f -

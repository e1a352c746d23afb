#!/usr/bin/env bash
exec bash ../build-one.sh sched "$@"

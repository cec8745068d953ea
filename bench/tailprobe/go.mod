module github.com/faultline/faultline/bench/tailprobe

go 1.26.8

require (
	github.com/hpcloud/tail v1.0.0
	github.com/nxadm/tail v1.4.11
)

require (
	github.com/fsnotify/fsnotify v1.6.0 // indirect
	golang.org/x/sys v0.0.0-20220908164124-27713097b956 // indirect
	gopkg.in/fsnotify.v1 v1.4.7 // indirect
	gopkg.in/tomb.v1 v1.0.0-20141024135613-dd632973f1e7 // indirect
)

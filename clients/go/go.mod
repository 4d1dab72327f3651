module github.com/uidgen/uidgen/clients/go

go 1.19

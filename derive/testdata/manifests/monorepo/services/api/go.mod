module example.test/mono/api

go 1.22

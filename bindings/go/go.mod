module accel

go 1.21

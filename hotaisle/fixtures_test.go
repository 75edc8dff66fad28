package hotaisle

// Fixtures from hotaisle.md section 6 (E1-E11), verbatim where complete.

const e1VMTypes = `[
  {"Quantity": 3, "MinimumReservationMinutes": 30, "OnDemandPrice": 299,
   "Specs": {"cpu_cores": 13, "ram_capacity": 240518168576, "disk_capacity": 13194139533312,
     "cpus": {"count": 1, "manufacturer": "Intel", "model": "Xeon Platinum 8470", "cores": 13, "frequency": 2000000000},
     "gpus": [{"count": 1, "manufacturer": "AMD", "model": "MI300X"}]}},
  {"Quantity": 0, "MinimumReservationMinutes": 30, "OnDemandPrice": 299,
   "Specs": {"cpu_cores": 8, "ram_capacity": 240518168576, "disk_capacity": 13194139533312,
     "cpus": {"count": 1, "manufacturer": "Intel", "model": "Xeon Platinum 8462Y+", "cores": 8, "frequency": 2800000000},
     "gpus": [{"count": 1, "manufacturer": "AMD", "model": "MI300X"}]}},
  {"Quantity": 1, "MinimumReservationMinutes": 60, "OnDemandPrice": 598,
   "Specs": {"cpu_cores": 26, "ram_capacity": 481036337152, "disk_capacity": 13194139533312,
     "cpus": {"count": 1, "manufacturer": "Intel", "model": "Xeon Platinum 8470", "cores": 26, "frequency": 2000000000},
     "gpus": [{"count": 2, "manufacturer": "AMD", "model": "MI300X"}]}}
]`

const e2BareMetalTypes = `[{"Quantity": 1, "MinimumReservationMinutes": 480, "OnDemandPrice": 2712,
  "Specs": {"cpu_cores": 64, "ram_capacity": 2199023255552, "disk_capacity": 123840207962112,
    "cpus": [{"count": 2, "manufacturer": "Intel", "model": "Xeon Platinum 8462Y+", "cores": 32, "frequency": 2800000000}],
    "memory_modules": [{"count": 32, "manufacturer": "Samsung", "model": "DDR5-4800 RDIMM", "capacity": 68719476736}],
    "disks": [{"count": 2, "manufacturer": "Dell", "model": "BOSS-N1", "type": "SATA SSD", "capacity": 480103981056},
              {"count": 8, "manufacturer": "Samsung", "model": "PM1733a", "type": "NVMe", "capacity": 15360000000000}],
    "gpus": [{"count": 8, "manufacturer": "AMD", "model": "MI300X"}]}}]`

const e3bMinimalProvision = `{"gpus": [{"count": 1, "manufacturer": "AMD", "model": "MI300X"}],
 "user_data_url": "https://raw.githubusercontent.com/hotaisle/cloud-init-templates/master/vllm-docker.yaml"}`

const e4VM = `{"name": "enc1-gpuvm022", "ip_address": "203.0.113.42", "description": "",
 "cpu_cores": 13, "ram_capacity": 240518168576, "disk_capacity": 13194139533312,
 "cpus": {"count": 1, "manufacturer": "Intel", "model": "Xeon Platinum 8470", "cores": 13, "frequency": 2000000000},
 "gpus": [{"count": 1, "manufacturer": "AMD", "model": "MI300X"}]}`

const e5State = `{"state": "running", "host": "enc1-gpuhost07"}`

// e6VMs: an array of E4 objects after a PATCH, one with an SSH front.
const e6VMs = `[{"name": "enc1-gpuvm022", "ip_address": "203.0.113.42", "description": "ci-runner-1",
 "cpu_cores": 13, "ram_capacity": 240518168576, "disk_capacity": 13194139533312,
 "cpus": {"count": 1, "manufacturer": "Intel", "model": "Xeon Platinum 8470", "cores": 13, "frequency": 2000000000},
 "gpus": [{"count": 1, "manufacturer": "AMD", "model": "MI300X"}],
 "ssh_access": {"ip_address": "203.0.113.42", "port": 22}}]`

const e7Reserve = `{"description": "training node", "specs": {"cpu_cores": 64, "ram_capacity": 2199023255552, "disk_capacity": 123840207962112}}`

const e7Server = `{"name": "enc1-gpu012", "ip_address": "10.20.4.12", "manufacturer": "Dell", "model": "PowerEdge XE9680",
 "description": "training node", "support_access_enabled": false,
 "ssh_access": {"ip_address": "198.51.100.7", "port": 22013, "dns_name": "ssh.hotaisle.cloud"},
 "cpu_cores": 64, "ram_capacity": 2199023255552, "disk_capacity": 123840207962112,
 "cpus": [{"count": 2, "manufacturer": "Intel", "model": "Xeon Platinum 8462Y+", "cores": 32, "frequency": 2800000000}],
 "gpus": [{"count": 8, "manufacturer": "AMD", "model": "MI300X"}],
 "os_status": {"os_selection": "ubuntu-2404.4", "os_install_status": "installed", "last_imaging_update": "2026-06-20T14:03:11.512Z"}}`

const e8Reinstalling = `{"name": "enc1-gpu012", "ip_address": "10.20.4.12", "manufacturer": "Dell", "model": "PowerEdge XE9680",
 "description": "training node", "cpu_cores": 64, "ram_capacity": 2199023255552, "disk_capacity": 123840207962112,
 "os_status": {"os_selection": "ubuntu-2404.4", "os_install_status": "installing_os", "last_imaging_update": "2026-06-21T09:41:27Z"}}`

const e8Power = `{"state": "On"}`

const e9Key = `{"type": "ssh-ed25519", "public_key": "AAAAC3NzaC1lZDI1NTE5AAAAIHk", "fingerprint": "SHA256:Xk3f9Qw2Lm8/Zr7Tb1+Ny4Hc6Vd0Pa5Se2Ju9Og3Ki", "comment": "ci@build"}`

const e9Fingerprint = "SHA256:Xk3f9Qw2Lm8/Zr7Tb1+Ny4Hc6Vd0Pa5Se2Ju9Og3Ki"

const e10User = `{"user": {"name": "Jane Ops", "email": "jane@acme.test", "created": "2025-08-01T12:00:00Z"},
 "teams": [{"handle": "acme", "name": "Acme", "maximum_virtual_machines": 4, "maximum_bare_metal_servers": 1,
            "roles": ["owner", "purchaser", "operator", "user"], "effective_roles": ["operator", "user"]}]}`

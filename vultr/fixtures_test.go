package vultr

// Fixtures from /shared/api/vultr.md §7 (constructed there from real shapes).
const (
	fixturePlans2 = `{"plans":[
 {"id":"vcg-a100-3c-30g-20vram","vcpu_count":3,"ram":30720,"disk":700,"disk_count":1,"bandwidth":6144,
  "monthly_cost":437.5,"hourly_cost":0.599,"type":"vcg","gpu_vram_gb":20,"gpu_type":"NVIDIA_A100","locations":["ewr","ord"]},
 {"id":"vcg-l40s-16c-180g-48vram","vcpu_count":16,"ram":184320,"disk":1200,"disk_count":1,"bandwidth":10240,
  "monthly_cost":1226.4,"hourly_cost":1.68,"type":"vcg","gpu_vram_gb":48,"gpu_type":"NVIDIA_L40S","locations":["sjc"]}],
 "meta":{"total":14,"links":{"next":"bmV4dF9fdmNnLWwxMHMtMTZjLTE4MGctNDh2cmFt","prev":""}}}`

	fixtureMetalPlans = `{"plans_metal":[{"id":"vbm-112c-2048gb-8-h100-gpu","physical_cpus":2,"cpu_count":112,"cpu_cores":112,"cpu_threads":224,
  "cpu_model":"Platinum 8480+","cpu_mhz":2000,"ram":2097152,"disk":960,"disk_count":2,"bandwidth":15360,
  "monthly_cost":16074.24,"hourly_cost":23.92,"monthly_cost_preemptible":12364.8,"hourly_cost_preemptible":18.4,
  "type":"NVMe","locations":["sea"]}],"meta":{"total":1,"links":{"next":"","prev":""}}}`

	fixtureVPCObj = `{"id":"6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90","region":"ewr","description":"dstack-vpc-ewr",
        "v4_subnet":"10.6.96.0","v4_subnet_mask":20,"date_created":"2025-01-20T09:12:44+00:00"}`
	fixtureVPC     = `{"vpc":` + fixtureVPCObj + `}`
	fixtureVPCList = `{"vpcs":[` + fixtureVPCObj + `],"meta":{"total":1,"links":{"next":"","prev":""}}}`

	fixtureCreateInstance = `{"instance":{"id":"b3e1c0a2-5d4f-4e21-8c77-2f0a9d6e4b11","os":"Ubuntu 22.04 LTS x64","ram":30720,"disk":0,
 "main_ip":"0.0.0.0","vcpu_count":3,"region":"ewr","plan":"vcg-a100-3c-30g-20vram","date_created":"2025-01-20T09:13:02+00:00",
 "status":"pending","allowed_bandwidth":6144,"netmask_v4":"","gateway_v4":"0.0.0.0","power_status":"running",
 "server_status":"none","v6_network":"","v6_main_ip":"","v6_network_size":0,"label":"fleet-7f3a-0","internal_ip":"",
 "vpc_only":false,"kvm":"","hostname":"fleet-7f3a-0","os_id":1743,"app_id":0,"image_id":"","snapshot_id":"",
 "firewall_group_id":"","features":[],"tags":[],"user_scheme":"root","default_password":"Xq7!pR2#vL9m"}}`

	fixtureActiveInstanceObj = `{"id":"b3e1c0a2-5d4f-4e21-8c77-2f0a9d6e4b11","os":"Ubuntu 22.04 LTS x64","ram":30720,"disk":700,
 "main_ip":"149.28.40.17","vcpu_count":3,"region":"ewr","plan":"vcg-a100-3c-30g-20vram","date_created":"2025-01-20T09:13:02+00:00",
 "status":"active","allowed_bandwidth":6144,"netmask_v4":"255.255.254.0","gateway_v4":"149.28.40.1","power_status":"running",
 "server_status":"ok","v6_network":"","v6_main_ip":"","v6_network_size":0,"label":"fleet-7f3a-0","internal_ip":"10.6.96.3",
 "vpc_only":false,"kvm":"https://my.vultr.com/subs/vps/novnc/api.php?data=abc123","hostname":"fleet-7f3a-0","os_id":1743,
 "app_id":0,"image_id":"","snapshot_id":"","firewall_group_id":"","features":[],"tags":[],"user_scheme":"root"}`
	fixtureActiveInstance = `{"instance":` + fixtureActiveInstanceObj + `}`

	fixtureInstanceVPCs = `{"vpcs":[{"id":"6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90","mac_address":"5a:01:04:8c:2e:11","ip_address":"10.6.96.3"}],"meta":{"total":1,"links":{"next":"","prev":""}}}`

	fixtureCreateBareMetal = `{"bare_metal":{"id":"cb676a46-66fd-4dfb-b839-443f2e6c0b60","os":"Application","ram":"2321924 MB","disk":"8x 3576 GB NVMe","main_ip":"","cpu_count":128,"region":"ord","default_password":"t9#Kd2!wQz","date_created":"2025-02-01T10:00:00+00:00","status":"pending","netmask_v4":"","gateway_v4":"","plan":"vbm-256c-2048gb-8-mi300x-gpu","v6_network":"","v6_main_ip":"","v6_network_size":0,"mac_address":0,"label":"fleet-9c1b-0","tags":[],"os_id":186,"app_id":0,"image_id":"docker","features":[],"user_scheme":"root"}}`

	fixtureActiveBareMetal = `{"bare_metal":{"id":"cb676a46-66fd-4dfb-b839-443f2e6c0b60","os":"Application","ram":"2321924 MB","disk":"8x 3576 GB NVMe","main_ip":"45.77.100.20","cpu_count":128,"region":"ord","date_created":"2025-02-01 10:00:00","status":"active","netmask_v4":"255.255.254.0","gateway_v4":"45.77.100.1","plan":"vbm-256c-2048gb-8-mi300x-gpu","v6_network":"","v6_main_ip":"","v6_network_size":0,"mac_address":2199756823533,"label":"fleet-9c1b-0","tags":[],"os_id":186,"app_id":0,"image_id":"docker","features":[],"user_scheme":"root","internal_ip":"10.9.0.4","power_status":"running","some_new_field":{"x":1}}}`

	fixtureSSHKeyObj = `{"id":"3b8a2f61-8c1e-4c2a-9d0b-6e7f1a2b3c4d","date_created":"2025-01-20T09:00:00+00:00","name":"fleet-key","ssh_key":"ssh-ed25519 AAAAC3Nza xyz user@host"}`
	fixtureSSHKey    = `{"ssh_key":` + fixtureSSHKeyObj + `}`
)

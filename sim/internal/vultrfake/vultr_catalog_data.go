package vultrfake

// Default catalog of the Vultr fake. Prices and shapes follow the public
// plan lists (vultr.md §5 and §7): hourly_cost is the price per started
// hour, monthly_cost the monthly cap (730 h for Cloud GPU, 672 h otherwise).

var (
	vultrAllRegions = []string{"ewr", "ord", "atl", "dfw", "sea", "sjc", "lax", "ams", "fra", "nrt"}
	vultrRegionOpts = []string{"ddos_protection", "block_storage_storage_opt", "block_storage_high_perf", "load_balancers", "kubernetes"}
	vultrRegionConn = []string{"public_ip", "nat_gateway"}
)

func vultrRegionsDefault() []VultrRegion {
	r := func(id, city, country, continent string) VultrRegion {
		return VultrRegion{ID: id, City: city, Country: country, Continent: continent,
			Options: vultrRegionOpts, Connectivity: vultrRegionConn}
	}
	return []VultrRegion{
		r("ewr", "New Jersey", "US", "North America"),
		r("ord", "Chicago", "US", "North America"),
		r("atl", "Atlanta", "US", "North America"),
		r("dfw", "Dallas", "US", "North America"),
		r("sea", "Seattle", "US", "North America"),
		r("sjc", "Silicon Valley", "US", "North America"),
		r("lax", "Los Angeles", "US", "North America"),
		r("ams", "Amsterdam", "NL", "Europe"),
		r("fra", "Frankfurt", "DE", "Europe"),
		r("nrt", "Tokyo", "JP", "Asia"),
	}
}

func vultrPlansDefault() []VultrPlan {
	cpu := func(id, typ string, vcpu, ramMB, diskGB, bw int, monthly, hourly float64) VultrPlan {
		return VultrPlan{ID: id, VCPUCount: vcpu, RAM: ramMB, Disk: diskGB, DiskCount: 1, Bandwidth: bw,
			MonthlyCost: monthly, HourlyCost: hourly, Type: typ, Locations: vultrAllRegions}
	}
	gpu := func(id string, vcpu, ramMB, diskGB, bw int, monthly, hourly float64, vram int, gpuType string, locs ...string) VultrPlan {
		return VultrPlan{ID: id, VCPUCount: vcpu, RAM: ramMB, Disk: diskGB, DiskCount: 1, Bandwidth: bw,
			MonthlyCost: monthly, HourlyCost: hourly, Type: "vcg", GPUVRAM: vram, GPUType: gpuType, Locations: locs}
	}
	return []VultrPlan{
		cpu("vc2-1c-1gb", "vc2", 1, 1024, 25, 1024, 5, 0.007),
		cpu("vc2-1c-2gb", "vc2", 1, 2048, 55, 2048, 10, 0.015),
		cpu("vc2-2c-4gb", "vc2", 2, 4096, 80, 3072, 20, 0.03),
		cpu("vc2-4c-8gb", "vc2", 4, 8192, 160, 4096, 40, 0.06),
		cpu("vc2-8c-32gb", "vc2", 8, 32768, 640, 6144, 160, 0.238),
		cpu("vhf-1c-1gb", "vhf", 1, 1024, 32, 1024, 6, 0.009),
		cpu("vhf-2c-4gb", "vhf", 2, 4096, 128, 3072, 24, 0.036),
		cpu("vhf-4c-16gb", "vhf", 4, 16384, 384, 5120, 96, 0.143),
		cpu("vhp-1c-1gb-amd", "vhp", 1, 1024, 25, 2048, 6, 0.009),
		cpu("vhp-2c-4gb-amd", "vhp", 2, 4096, 100, 5120, 24, 0.036),
		cpu("vhp-4c-8gb-intel", "vhp", 4, 8192, 180, 6144, 48, 0.071),
		cpu("voc-c-2c-4gb-50s-amd", "voc", 2, 4096, 50, 5120, 40, 0.06),
		cpu("voc-g-4c-16gb-80s-amd", "voc", 4, 16384, 80, 6144, 120, 0.179),
		cpu("voc-m-2c-16gb-100s-amd", "voc", 2, 16384, 100, 5120, 90, 0.134),
		gpu("vcg-a16-2c-8g-2vram", 2, 8192, 70, 1024, 43, 0.059, 2, "NVIDIA_A16", "ewr", "ord", "ams"),
		gpu("vcg-a100-1c-6g-4vram", 1, 6144, 70, 1024, 90, 0.123, 4, "NVIDIA_A100", "ewr", "ord", "sjc", "ams"),
		gpu("vcg-a100-3c-30g-20vram", 3, 30720, 700, 6144, 437.5, 0.599, 20, "NVIDIA_A100", "ewr", "ord"),
		gpu("vcg-a100-12c-120g-80vram", 12, 122880, 1400, 10240, 1750, 2.397, 80, "NVIDIA_A100", "ewr", "sjc"),
		gpu("vcg-l40s-16c-180g-48vram", 16, 184320, 1200, 10240, 1226.4, 1.68, 48, "NVIDIA_L40S", "sjc", "ewr", "ams"),
	}
}

func vultrMetalPlansDefault() []VultrMetalPlan {
	return []VultrMetalPlan{
		{ID: "vbm-4c-32gb", PhysicalCPUs: 1, CPUCount: 4, CPUCores: 4, CPUThreads: 8, CPUModel: "E3-1270v6",
			CPUMHz: 3800, RAM: 32768, Disk: 240, DiskCount: 2, Bandwidth: 5120, MonthlyCost: 120, HourlyCost: 0.179,
			MonthlyCostPreemptible: 90, HourlyCostPreemptible: 0.134, Type: "SSD",
			Locations: []string{"ewr", "ord", "sjc", "ams", "atl"}, NoPrivateNetwork: true},
		{ID: "vbm-24c-256gb-amd", PhysicalCPUs: 1, CPUCount: 24, CPUCores: 24, CPUThreads: 48, CPUModel: "AMD EPYC 7443P",
			CPUMHz: 2850, RAM: 262144, Disk: 1920, DiskCount: 2, Bandwidth: 10240, MonthlyCost: 725.76, HourlyCost: 1.08,
			MonthlyCostPreemptible: 544.32, HourlyCostPreemptible: 0.81, Type: "NVMe",
			Locations: []string{"ewr", "ord", "sjc", "dfw", "ams"}},
		{ID: "vbm-48c-1024gb-4-a100-gpu", PhysicalCPUs: 2, CPUCount: 48, CPUCores: 48, CPUThreads: 96, CPUModel: "Xeon Gold 6342",
			CPUMHz: 2800, RAM: 1048576, Disk: 1920, DiskCount: 2, Bandwidth: 10240, MonthlyCost: 5040, HourlyCost: 7.5,
			MonthlyCostPreemptible: 3870.72, HourlyCostPreemptible: 5.76, Type: "NVMe", Locations: []string{"ewr"}},
		{ID: "vbm-112c-2048gb-8-h100-gpu", PhysicalCPUs: 2, CPUCount: 112, CPUCores: 112, CPUThreads: 224, CPUModel: "Platinum 8480+",
			CPUMHz: 2000, RAM: 2097152, Disk: 960, DiskCount: 2, Bandwidth: 15360, MonthlyCost: 16074.24, HourlyCost: 23.92,
			MonthlyCostPreemptible: 12364.8, HourlyCostPreemptible: 18.4, Type: "NVMe", Locations: []string{"sea"}},
		{ID: "vbm-256c-2048gb-8-mi300x-gpu", PhysicalCPUs: 2, CPUCount: 128, CPUCores: 128, CPUThreads: 256, CPUModel: "AMD EPYC 9534",
			CPUMHz: 2450, RAM: 2097152, Disk: 3576, DiskCount: 8, Bandwidth: 15360, MonthlyCost: 11773.44, HourlyCost: 17.52,
			MonthlyCostPreemptible: 8830.08, HourlyCostPreemptible: 13.14, Type: "NVMe", Locations: []string{"ord", "atl", "sea"}},
	}
}

// DefaultVultrCatalog returns (a fresh copy of) the Vultr fake's default
// catalog: 19 VM plans (vc2, vhf, vhp, voc; Cloud GPU vcg with the fractional
// vcg-a100-1c-6g-4vram, the full vcg-a100-12c-120g-80vram and
// vcg-l40s-16c-180g-48vram), 5 bare-metal plans (vbm-4c-32gb without private
// networking, vbm-24c-256gb-amd, vbm-48c-1024gb-4-a100-gpu,
// vbm-112c-2048gb-8-h100-gpu in sea, vbm-256c-2048gb-8-mi300x-gpu at 17.52
// USD/h in ord, atl and sea), 10 regions, nothing sold out.
func DefaultVultrCatalog() VultrCatalog {
	c := VultrCatalog{Plans: vultrPlansDefault(), MetalPlans: vultrMetalPlansDefault(), Regions: vultrRegionsDefault()}
	return c.clone()
}

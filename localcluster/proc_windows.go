package localcluster

func cmdline(int) []string { return nil }

func haveProc() bool { return false }

func alive(int) bool { return false }

func ours(int, string) bool { return false }

func processesNaming(string) []int { return nil }

func signal(int, bool) error { return ErrUnsupported }

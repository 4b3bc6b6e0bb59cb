"""Loop process: the fixed-rate cycle and everything it calls. Never imports controller.daemon.io."""

package io.coord.mutex;

import io.coord.testkit.InWatchMode;

@InWatchMode
class MutexFaultInWatchModeTest extends MutexFaultTest {}

package io.coord.semaphore;

import io.coord.testkit.InWatchMode;

@InWatchMode
class SemaphoreFaultsInWatchModeTest extends SemaphoreFaultsTest {}

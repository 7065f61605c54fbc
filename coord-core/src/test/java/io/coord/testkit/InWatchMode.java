package io.coord.testkit;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Runs every test of the class in {@link EngineMode#WATCH} only: on a subclass of a suite marked {@link InViewMode},
 * the suite's other mode, in a test JVM of its own.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@ParameterizedClass(name = "{0}")
@EnumSource(value = EngineMode.class, names = "WATCH")
public @interface InWatchMode {}

package io.coord.testkit;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Runs every test of the class in {@link EngineMode#VIEW} only, as {@link InBothEngineModes} does for both. A long
 * suite runs its two modes as two classes, this one and a subclass marked {@link InWatchMode}: Surefire hands out
 * whole classes to its test JVMs, so the two then run side by side instead of one after the other.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@ParameterizedClass(name = "{0}")
@EnumSource(value = EngineMode.class, names = "VIEW")
public @interface InViewMode {}

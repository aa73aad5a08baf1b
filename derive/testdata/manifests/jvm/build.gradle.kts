plugins {
    kotlin("jvm") version "1.9.24"
}

repositories {
    mavenCentral()
    maven(url = "https://maven.corp.test/snapshots")
    maven { url = uri("https://jitpack.example.test") }
}
